"""Learning environments (LMS) that open R42 through LTI 1.3, from the command line (issue 48, part 2).

    r42 lti add --tenant SLUG --issuer ISS --client-id ID --deployment-id DEP [--deployment-id DEP2]
                --jwks-url URL --auth-url URL [--token-url URL] [--instructor-role admin|learner]
    r42 lti list --tenant SLUG [--json]
    r42 lti remove --tenant SLUG --issuer ISS --client-id ID
    r42 lti registration-url --tenant SLUG   a one-time URL for the LMS's dynamic registration (Moodle, Brightspace)

One code path with the rest of the app: services/store/lti.py (and services/lti_registration.py). The tool's
endpoints to give the LMS are printed by `add` (login initiation, launch, keys).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from r42_app.cli.common import EXIT_OK, _fail
from r42_app.container import connected
from r42_app.core.lti import LtiError
from r42_app.services.store.tenants import TenantError
from r42_app.settings import load_settings


def _tool_urls(svc) -> list[tuple[str, str]]:
    base = svc.settings.link_base.rstrip("/")
    return [("login initiation URL", f"{base}/lti/login"), ("redirect (launch) URL", f"{base}/lti/launch"),
            ("public keyset URL", f"{base}/lti/jwks"), ("tool URL", f"{base}/")]


def cmd_add(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            tenant = svc.tenants.get(args.tenant)
            reg = svc.lti.add(tenant, "", "cli", args.issuer, args.client_id, args.deployment_id, args.jwks_url,
                              args.auth_url, args.token_url or "", args.instructor_role)
        except (LtiError, TenantError) as exc:
            return _fail(str(exc))
        urls = _tool_urls(svc)
    print(f"tenant {args.tenant!r}: {reg.issuer} (client id {reg.client_id}) may open R42 for deployment(s) "
          f"{', '.join(reg.deployment_ids)}; its instructors become {reg.instructor_role}s")
    print("give the LMS these addresses of the tool:")
    for label, url in urls:
        print(f"  {label:<22}{url}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            tenant = svc.tenants.get(args.tenant)
        except TenantError as exc:
            return _fail(str(exc))
        regs = svc.lti.list(tenant)
    rows: list[dict[str, Any]] = [
        {"issuer": r.issuer, "client_id": r.client_id, "deployment_ids": list(r.deployment_ids),
             "jwks_url": r.jwks_url, "auth_url": r.auth_url, "token_url": r.token_url or None,
             "instructor_role": r.instructor_role} for r in regs]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        print(f"tenant {args.tenant!r} has no learning environment; `r42 lti add --tenant {args.tenant} ...` adds one")
    else:
        for row in rows:
            print(f"{row['issuer']}  client {row['client_id']}  deployments {', '.join(row['deployment_ids'])}  "
                  f"instructors: {row['instructor_role']}")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            tenant = svc.tenants.get(args.tenant)
        except TenantError as exc:
            return _fail(str(exc))
        removed = svc.lti.remove(tenant, "", "cli", args.issuer, args.client_id)
    print(f"removed {args.issuer} (client id {args.client_id}) from tenant {args.tenant!r}" if removed else
          f"tenant {args.tenant!r} has no such learning environment; nothing changed")
    return EXIT_OK


def cmd_registration_url(args: argparse.Namespace) -> int:
    import time

    with connected(load_settings()) as svc:
        try:
            tenant = svc.tenants.get(args.tenant)
        except TenantError as exc:
            return _fail(str(exc))
        made = svc.lti_registrations.invitation(tenant, "", "cli")
    days = round((made.expires - time.time()) / 86400)
    print(made.url)
    print(f"paste it into the LMS's dynamic registration (Moodle: Site administration > Plugins > Activity modules > "
          f"External tool > Manage tools > Tool URL). It works once, for {days} days; the LMS is then a learning "
          f"environment of tenant {args.tenant!r} (its instructors become admins: `r42 lti list`)")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    lti = sub.add_parser("lti", help="learning environments that open R42 (LTI 1.3): add, list, remove, "
                                             "registration-url")
    lsub = lti.add_subparsers(dest="lti_command", required=True)
    add = lsub.add_parser("add", help="register an LMS to a tenant (again: adds deployment ids)")
    add.add_argument("--tenant", required=True)
    add.add_argument("--issuer", required=True, help="the platform's issuer (its `iss`)")
    add.add_argument("--client-id", required=True, help="the client id the platform gave R42")
    add.add_argument("--deployment-id", required=True, action="append", help="a deployment id (repeat for more)")
    add.add_argument("--jwks-url", required=True, help="the platform's public keyset URL")
    add.add_argument("--auth-url", required=True, help="the platform's OIDC authentication request URL")
    add.add_argument("--token-url", help="the platform's access token URL (for its services; optional)")
    add.add_argument("--instructor-role", choices=("admin", "learner"), default="admin",
                     help="what the LMS's instructors and administrators become in R42 (default admin)")
    add.set_defaults(func=cmd_add)
    listing = lsub.add_parser("list", help="a tenant's learning environments")
    listing.add_argument("--tenant", required=True)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_list)
    remove = lsub.add_parser("remove", help="unregister an LMS (its people stay, they sign in otherwise)")
    remove.add_argument("--tenant", required=True)
    remove.add_argument("--issuer", required=True)
    remove.add_argument("--client-id", required=True)
    remove.set_defaults(func=cmd_remove)
    url = lsub.add_parser("registration-url", help="a one-time URL an LMS registers itself with (dynamic "
                                                   "registration)")
    url.add_argument("--tenant", required=True)
    url.set_defaults(func=cmd_registration_url)
