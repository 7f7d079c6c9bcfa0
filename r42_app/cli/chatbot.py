"""Who may use what (issue 11) from the command line: `chatbot access`, `user-grant` / `user-deny` /
`user-inherit`, `enable` / `disable` (the tenant's master switch) and `migrate-legacy`. Every change is
audited with the actor "cli"."""

from __future__ import annotations

import argparse
import json
from typing import Any

from r42_app.cli.common import EXIT_OK, _fail, exit_code_of, tenants_named
from r42_app.cli.kb import register_rag_backfill
from r42_app.container import connected
from r42_app.core.capabilities import CAPABILITIES, DENY, GRANT, INHERIT
from r42_app.core.identity import Tenant
from r42_app.services.store.access import AccessError, AccessStore
from r42_app.settings import load_settings


def _user_of(store: AccessStore, tenant: Tenant, email: str) -> dict:
    user = store.user_by_email(tenant, email)
    if user is None:
        raise SystemExit(_fail(f"no user {email!r} in tenant {tenant.slug!r}; "
                               f"`r42 chatbot access --tenant {tenant.slug}` lists them"))
    return user


def _caps(caps: frozenset[str]) -> str:
    return ",".join(c for c in CAPABILITIES if c in caps) or "-"


def cmd_chatbot_override(args: argparse.Namespace) -> int:
    """user-grant / user-deny / user-inherit: one override for one user, audited as the CLI."""
    value = {"user-grant": GRANT, "user-deny": DENY, "user-inherit": INHERIT}[args.chatbot_command]
    cfg = load_settings()
    with connected(cfg) as svc:
        store = svc.access
        tenant = tenants_named(svc, args.tenant)[0]
        user = _user_of(store, tenant, args.email)
        _chatbot, before = store.effective(tenant.id, user["id"])
        try:
            store.set_override(tenant, user["id"], args.capability, value, "", "cli")
        except AccessError as exc:
            return _fail(str(exc), exit_code_of(exc))
        _chatbot, after = store.effective(tenant.id, user["id"])
    print(f"{user['email']}: {args.capability} = {value}; "
          f"effective {_caps(before.effective)} -> {_caps(after.effective)}")
    return EXIT_OK


def cmd_chatbot_switch(args: argparse.Namespace) -> int:
    """enable / disable: the tenant's master switch."""
    enabled = args.chatbot_command == "enable"
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        try:
            changed = svc.access.set_enabled(tenant, enabled, "", "cli")
        except AccessError as exc:
            return _fail(str(exc), exit_code_of(exc))
    state = "on" if enabled else "off"
    print(f"R42 is {state} for {tenant.slug}" + ("" if changed else " (it already was)"))
    return EXIT_OK


def cmd_chatbot_question_log(args: argparse.Namespace) -> int:
    """question-log on|off: the tenant's question log (the knowledge-gaps report's ground)."""
    on = args.state == "on"
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        try:
            changed = svc.access.set_question_log(tenant, on, "", "cli")
        except AccessError as exc:
            return _fail(str(exc), exit_code_of(exc))
    print(f"the question log is {args.state} for {tenant.slug}" + ("" if changed else " (it already was)"))
    return EXIT_OK


def cmd_chatbot_access(args: argparse.Namespace) -> int:
    """Users x capabilities of a tenant, and each user's effective set."""
    cfg = load_settings()
    with connected(cfg) as svc:
        store = svc.access
        tenant = tenants_named(svc, args.tenant)[0]
        chatbot = store.tenant_chatbot(tenant.id)
        users = store.users(tenant)
        if args.email:
            users = [u for u in users if u.email == args.email.strip()]
            if not users:
                _user_of(store, tenant, args.email)
    rows: list[dict[str, Any]] = []
    for u in users:
        overrides = dict(u.row.overrides) if u.row else {}
        rows.append({"email": u.email, "name": u.name, "role": u.role, "source": u.resolution.source,
                     "overrides": {c: overrides.get(c, INHERIT) for c in CAPABILITIES},
                     "legacy_list": list(u.row.capability_scopes) if u.row and u.row.is_legacy else None,
                     "effective": [c for c in CAPABILITIES if c in u.resolution.effective]})
    if args.json:
        print(json.dumps({"tenant": tenant.slug, "enabled": chatbot.enabled,
                          "default": [c for c in CAPABILITIES if c in chatbot.default], "users": rows},
                         ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{tenant.slug}: R42 {'on' if chatbot.enabled else 'OFF'}; default {_caps(chatbot.default)}")
    header = ["email", "role", *CAPABILITIES, "effective"]
    table = [[r["email"], r["role"], *(("list" if r["legacy_list"] is not None else r["overrides"][c])
                                       for c in CAPABILITIES), ",".join(r["effective"]) or "-"] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table)]
    for line in [header, *table]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())
    return EXIT_OK


def cmd_chatbot_migrate(args: argparse.Namespace) -> int:
    """migrate-legacy: exact lists -> overrides with the same effective set, printed before and after."""
    cfg = load_settings()
    with connected(cfg) as svc:
        store = svc.access
        total = 0
        for tenant in tenants_named(svc, args.tenant):
            try:
                done = store.migrate_legacy(tenant, None, "", "cli", dry_run=args.dry_run)
            except AccessError as exc:
                return _fail(str(exc), exit_code_of(exc))
            for user, after in done:
                print(f"{tenant.slug}  {user.email}: {_caps(user.resolution.effective)} -> {_caps(after)}")
            total += len(done)
    print(f"{total} legacy row(s) " + ("would be migrated (dry run: nothing written)" if args.dry_run else "migrated"))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """`chatbot` and its commands, `rag-backfill` (kb.py's) first."""
    chatbot = sub.add_parser("chatbot", help="assistant operations")
    chatbot_sub = chatbot.add_subparsers(dest="chatbot_command", required=True)
    register_rag_backfill(chatbot_sub)
    overrides = (("user-grant", "grant"), ("user-deny", "deny"), ("user-inherit", "inherit (follow the default)"))
    for name, what in overrides:
        override = chatbot_sub.add_parser(name, help=f"{what} one capability for one user")
        override.add_argument("--tenant", required=True)
        override.add_argument("--email", required=True)
        override.add_argument("--capability", required=True, choices=CAPABILITIES)
        override.set_defaults(func=cmd_chatbot_override)
    show = chatbot_sub.add_parser("access", help="users x capabilities and each user's effective set")
    show.add_argument("--tenant", required=True)
    show.add_argument("--email", help="only this user")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_chatbot_access)
    for name, what in (("enable", "turn R42 on"), ("disable", "turn R42 off")):
        switch = chatbot_sub.add_parser(name, help=f"{what} for a whole tenant (the master switch)")
        switch.add_argument("--tenant", required=True)
        switch.set_defaults(func=cmd_chatbot_switch)
    question_log = chatbot_sub.add_parser(
        "question-log", help="keep the tenant's questions (pseudonymous) for the knowledge-gaps report, or not")
    question_log.add_argument("state", choices=("on", "off"))
    question_log.add_argument("--tenant", required=True)
    question_log.set_defaults(func=cmd_chatbot_question_log)
    migrate = chatbot_sub.add_parser("migrate-legacy",
                                     help="turn legacy exact lists into overrides (same effective set)")
    migrate.add_argument("--tenant", required=True, help="tenant slug, or * for all tenants")
    migrate.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    migrate.set_defaults(func=cmd_chatbot_migrate)
