"""People from the command line (issue 46): `r42 user invite|list|role|deactivate|activate|import|reset-link`, and
`r42 user forget` (privacy.py). One code path with /admin/people and /api/people: services/store/people.py.

    r42 user invite --tenant SLUG --email E [--name NAME] [--role learner|admin]
    r42 user list --tenant SLUG [--search Q] [--role R] [--state S] [--json]
    r42 user role --tenant SLUG --email E --role learner|admin
    r42 user deactivate|activate --tenant SLUG --email E
    r42 user import --tenant SLUG FILE.csv [--dry-run]
    r42 user reset-link --tenant SLUG --email E

Without mail (R42_SMTP_HOST unset) every link is printed, to hand over; with it, it is mailed and printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from r42_app.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, _err, _fail, tenants_named
from r42_app.cli.privacy import register_forget
from r42_app.container import connected
from r42_app.core.people import MAX_IMPORT_BYTES, ROLE_NAMES, STATE_NAMES
from r42_app.services.store.people import Actor, Link, PeopleError, Person
from r42_app.settings import load_settings

CLI = Actor.cli()


def link_line(link: Link) -> str:
    if link.mailed:
        return f"mailed to {link.person.email}; the link: {link.url}"
    if link.mail_error:
        return f"the mail to {link.person.email} FAILED ({link.mail_error}); hand over this link: {link.url}"
    return f"mail is off: hand this link to {link.person.email}: {link.url}"


def cmd_invite(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        try:
            link = svc.people.invite(tenant, CLI, args.email, args.name or "", args.role)
        except PeopleError as exc:
            return _fail(str(exc))
    if link.again:
        print(f"{link.person.email} ({link.person.name}) was invited to {tenant.slug} already, as {link.person.role}: "
              f"a new link (the previous one no longer works; name and role unchanged, `r42 user role` changes a "
              f"role); it works 7 days, once")
    else:
        print(f"invited {link.person.email} ({link.person.name}) to {tenant.slug} as {link.person.role}; "
              f"the link works 7 days, once")
    print(link_line(link))
    return EXIT_FAILURE if link.mail_error else EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        try:
            people: list[Person] = []
            total = -1
            page = 1
            while total < 0 or len(people) < total:
                batch, total = svc.people.list(tenant, args.search or "", args.role or "", args.state or "",
                                               page=page, per_page=500)
                if not batch:
                    break
                people += batch
                page += 1
        except PeopleError as exc:
            return _fail(str(exc))
    if args.json:
        print(json.dumps([p.to_json() for p in people], ensure_ascii=False))
        return EXIT_OK
    if not people:
        print(f"nobody in {tenant.slug} matches" if (args.search or args.role or args.state)
              else f"nobody in {tenant.slug} yet: `r42 user invite --tenant {tenant.slug} --email E` invites someone")
        return EXIT_OK
    rows = [("E-MAIL", "NAME", "ROLE", "STATE", "LAST SIGN-IN")]
    rows += [(p.email, p.name, p.role, p.state, p.last_sign_in[:16] or "-") for p in people]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print(f"{len(people)} people", file=sys.stderr)
    return EXIT_OK


def _person_command(action: str):
    def command(args: argparse.Namespace) -> int:
        with connected(load_settings()) as svc:
            tenant = tenants_named(svc, args.tenant)[0]
            try:
                person = svc.people.by_email(tenant, args.email)
                if action == "role":
                    after = svc.people.set_role(tenant, CLI, person.id, args.role)
                    print(f"{after.email} is {ROLE_NAMES[after.role]} ({after.role})"
                          + ("" if after.role != person.role else " already; nothing changed"))
                elif action == "reset-link":
                    print(link_line(svc.people.reset_link(tenant, CLI, person.id)))
                else:
                    state = "deactivated" if action == "deactivate" else "active"
                    after = svc.people.set_state(tenant, CLI, person.id, state)
                    said = STATE_NAMES[after.state]
                    if after.state == person.state:
                        print(f"{after.email} was {said} already; nothing changed")
                    elif state == "deactivated":
                        print(f"{after.email} is {said}: every session of theirs ended; nothing is deleted")
                    else:
                        print(f"{after.email} is {said} again")
            except PeopleError as exc:
                return _fail(str(exc), EXIT_FAILURE if exc.kind == "conflict" and "last" in exc.code
                             else EXIT_BAD_INPUT)
        return EXIT_OK
    return command


def cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            return _fail(f"{path}: {path.stat().st_size:,} bytes; a people CSV is at most {MAX_IMPORT_BYTES:,}")
        data = path.read_bytes()
    except OSError as exc:
        return _fail(f"{path}: cannot be read ({exc.strerror or exc})")

    def progress(step: str, done: int, total: int) -> None:
        print(f"\r{step}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    with connected(load_settings()) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        try:
            report = svc.people.import_csv(tenant, CLI, data, dry_run=args.dry_run, progress=progress)
        except PeopleError as exc:
            return _fail(f"{path}: {exc}")
    for bad in report.bad:
        _err(f"{path}:{bad.line}: {bad.email or '(no e-mail)'}: {bad.reason}")
    summary = (f"{report.rows} row(s): {report.to_invite} new, {report.unchanged} already in {tenant.slug}, "
               f"{len(report.bad)} bad")
    if report.bad:
        _err(f"{summary}; nothing was written (fix the rows above and import again)")
        return EXIT_BAD_INPUT
    if args.dry_run:
        print(f"{summary}; a dry run: nothing was written (import without --dry-run to invite the new people)")
        return EXIT_OK
    for link in report.links:
        print(f"{link.person.email}\t{link.url}" + (f"\tMAIL FAILED: {link.mail_error}" if link.mail_error else ""))
    mailed = sum(1 for link in report.links if link.mailed)
    tail = (f"{mailed} invitation(s) mailed" + (f", {report.mail_failures} failed (their links are above)"
                                                 if report.mail_failures else "")
            if svc.people.mailer.on else "mail is off: the links above are to hand over")
    print(f"{summary}; invited {report.invited}; {tail}", file=sys.stderr)
    return EXIT_FAILURE if report.mail_failures else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    user = sub.add_parser("user", help="people: invite, list, change role, deactivate, import a CSV, forget")
    user_sub = user.add_subparsers(dest="user_command", required=True)

    invite = user_sub.add_parser("invite", help="invite one person (an invited person gets a new link)")
    invite.add_argument("--tenant", required=True)
    invite.add_argument("--email", required=True)
    invite.add_argument("--name", help="their name (default: the part of the e-mail before the @)")
    invite.add_argument("--role", default="learner", help="learner (default) or admin")
    invite.set_defaults(func=cmd_invite)

    listing = user_sub.add_parser("list", help="the tenant's people: e-mail, name, role, state, last sign-in")
    listing.add_argument("--tenant", required=True)
    listing.add_argument("--search", help="part of a name or e-mail address")
    listing.add_argument("--role", choices=["learner", "admin"])
    listing.add_argument("--state", choices=["invited", "active", "deactivated"])
    listing.add_argument("--json", action="store_true",
                         help='[{"id", "email", "name", "role", "state", "last_sign_in"}]')
    listing.set_defaults(func=cmd_list)

    role = user_sub.add_parser("role", help="make someone a learner or an admin (the last active admin stays one)")
    role.add_argument("--tenant", required=True)
    role.add_argument("--email", required=True)
    role.add_argument("--role", required=True, help="learner or admin")
    role.set_defaults(func=_person_command("role"))

    for verb, text in (("deactivate", "end every session of theirs and refuse their sign-in; nothing is deleted"),
                       ("activate", "let a deactivated person in again")):
        one = user_sub.add_parser(verb, help=text)
        one.add_argument("--tenant", required=True)
        one.add_argument("--email", required=True)
        one.set_defaults(func=_person_command(verb))

    link = user_sub.add_parser("reset-link", help="a password-reset link for an active person (2 hours, once)")
    link.add_argument("--tenant", required=True)
    link.add_argument("--email", required=True)
    link.set_defaults(func=_person_command("reset-link"))

    imp = user_sub.add_parser("import", help="invite the people of a CSV (email,name,role; ; or ,): every bad row "
                                             "is named and then nothing is written")
    imp.add_argument("--tenant", required=True)
    imp.add_argument("file", metavar="FILE.csv")
    imp.add_argument("--dry-run", action="store_true", help="only say what an import would do")
    imp.set_defaults(func=cmd_import)

    register_forget(user_sub)
