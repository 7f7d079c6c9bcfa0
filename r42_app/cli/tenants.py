"""Organisations from the command line (issue 46): `r42 tenant create|list|rename|disable|enable`.

    r42 tenant create --slug SLUG --name NAME [--admin-email E]
    r42 tenant list [--json]
    r42 tenant rename --slug SLUG --name NAME
    r42 tenant language --slug SLUG [--set nl|en]
    r42 tenant disable|enable --slug SLUG

One code path with the rest of the app: services/store/tenants.py.
"""

from __future__ import annotations

import argparse
import json

from r42_app.cli.common import EXIT_FAILURE, EXIT_OK, _fail
from r42_app.cli.people import link_line
from r42_app.container import connected
from r42_app.core.people import PeopleInputError, clean_email
from r42_app.services.store.people import Actor, PeopleError
from r42_app.services.store.tenants import TenantError
from r42_app.settings import load_settings


def cmd_create(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        if args.admin_email:  # checked before anything is written
            try:
                clean_email(args.admin_email)
            except PeopleInputError as exc:
                return _fail(f"--admin-email: {exc}")
        try:
            tenant = svc.tenants.create(args.slug, args.name)
        except TenantError as exc:
            return _fail(str(exc))
        print(f"created tenant {tenant.slug!r} ({tenant.name}): R42 on with the default capabilities; "
              f"add its knowledge base with `r42 kb import --tenant {tenant.slug} FILE`")
        if not args.admin_email:
            return EXIT_OK
        try:
            link = svc.people.invite(tenant, Actor.cli(), args.admin_email, "", "admin")
        except PeopleError as exc:
            return _fail(f"the tenant is made, but its first admin could not be invited: {exc}")
    print(f"invited {link.person.email} as its first admin")
    print(link_line(link))
    return EXIT_FAILURE if link.mail_error else EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        rows = svc.tenants.list()
    if args.json:
        print(json.dumps([row.to_json() for row in rows], ensure_ascii=False))
        return EXIT_OK
    if not rows:
        print("no tenants yet: `r42 tenant create --slug SLUG --name NAME` makes one")
        return EXIT_OK
    table = [("SLUG", "NAME", "PEOPLE", "TOPICS", "CREDITS", "LANGUAGE", "STATE")]
    table += [(r.slug, r.name, str(r.people), str(r.topics), "unlimited" if r.unlimited else f"{r.credits:g}",
               r.language, r.state) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(cell.ljust(width) if i < 2 or i >= 5 else cell.rjust(width)
                        for i, (cell, width) in enumerate(zip(line, widths, strict=True))).rstrip())
    return EXIT_OK


def cmd_rename(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            before, after = svc.tenants.rename(args.slug, args.name)
        except TenantError as exc:
            return _fail(str(exc))
    print(f"renamed tenant {args.slug!r}: {before!r} -> {after!r}")
    return EXIT_OK


def cmd_language(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            if args.set is None:
                print(svc.tenants.language(args.slug))
                return EXIT_OK
            changed = svc.tenants.set_language(args.slug, args.set)
        except TenantError as exc:
            return _fail(str(exc))
    print(f"tenant {args.slug!r} speaks {args.set}" + ("" if changed else " already; nothing changed") +
          ("" if not changed else ": its people who chose no language of their own see R42 in it from their next "
           "page"))
    return EXIT_OK


def _set_state(state: str):
    def command(args: argparse.Namespace) -> int:
        with connected(load_settings()) as svc:
            try:
                changed = svc.tenants.set_state(args.slug, state)
            except TenantError as exc:
                return _fail(str(exc))
        if not changed:
            print(f"tenant {args.slug!r} was {state} already; nothing changed")
        elif state == "disabled":
            print(f"disabled tenant {args.slug!r}: its people cannot sign in and the API answers 403 for them "
                  f"(open pages within 30 s); nothing is deleted. `r42 tenant enable --slug {args.slug}` undoes it")
        else:
            print(f"enabled tenant {args.slug!r}: its people can sign in again")
        return EXIT_OK
    return command


def register(sub: argparse._SubParsersAction) -> None:
    tenant = sub.add_parser("tenant", help="organisations: create, list, rename, language, disable, enable")
    tsub = tenant.add_subparsers(dest="tenant_command", required=True)
    create = tsub.add_parser("create", help="a new organisation, R42 on with the default capabilities and credits")
    create.add_argument("--slug", required=True, help="its short name in URLs and commands (kebab-case)")
    create.add_argument("--name", required=True, help="its name as people read it")
    create.add_argument("--admin-email", help="invite its first admin (the link is mailed, or printed to hand over)")
    create.set_defaults(func=cmd_create)
    listing = tsub.add_parser("list", help="every organisation: slug, name, people, topics, credits, language, "
                                           "state")
    listing.add_argument("--json", action="store_true", help='[{"slug", "name", "state", "people", "topics", '
                                                             '"credits" (null: unlimited), "language"}]')
    listing.set_defaults(func=cmd_list)
    rename = tsub.add_parser("rename", help="give an organisation another name (its slug stays)")
    rename.add_argument("--slug", required=True)
    rename.add_argument("--name", required=True)
    rename.set_defaults(func=cmd_rename)
    language = tsub.add_parser("language", help="show or set an organisation's language (people who chose none of "
                                                 "their own see R42 in it)")
    language.add_argument("--slug", required=True)
    language.add_argument("--set", metavar="LANGUAGE", help="nl or en")
    language.set_defaults(func=cmd_language)
    off = "its people cannot sign in, the API answers 403 for them; nothing is deleted"
    for state, verb, text in (("disabled", "disable", off), ("active", "enable", "let its people in again")):
        one = tsub.add_parser(verb, help=text)
        one.add_argument("--slug", required=True)
        one.set_defaults(func=_set_state(state))
