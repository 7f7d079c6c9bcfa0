"""Signing in with the organisation's identity provider, from the command line (issue 48): `r42 sso set|show|off`.

    r42 sso set --tenant SLUG --issuer URL --client-id ID --client-secret-file FILE --domains a.nl,b.nl
                [--admin-group NAME] [--no-passwords]
    r42 sso show --tenant SLUG [--json]
    r42 sso off --tenant SLUG

The secret is read from a file (never from the command line, where `ps` and the shell's history would keep it) and
never printed again. One code path with the admin page: services/store/sso.py.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from r42_app.cli.common import EXIT_OK, _fail
from r42_app.container import connected
from r42_app.core.sso import SsoError
from r42_app.services.store.tenants import TenantError
from r42_app.settings import load_settings

MAX_SECRET_FILE = 10_000


def _secret(path: str) -> str:
    file = Path(path)
    if not file.is_file():
        raise SsoError("sso.secret_invalid", f"--client-secret-file: no file at {path}")
    if file.stat().st_size > MAX_SECRET_FILE:
        raise SsoError("sso.secret_invalid", f"--client-secret-file: {path} is larger than {MAX_SECRET_FILE} bytes")
    try:
        return file.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError as exc:
        raise SsoError("sso.secret_invalid", f"--client-secret-file: {path} is not UTF-8 text") from exc


def _callback(svc) -> str:
    return svc.settings.link_base.rstrip("/") + "/auth/oidc/callback"


def cmd_set(args: argparse.Namespace) -> int:
    from r42_app.services.adapters.oidc import OidcError  # here: joserfc is for this command only (~0.05 s)

    with connected(load_settings()) as svc:
        try:
            secret = _secret(args.client_secret_file)
            tenant = svc.tenants.get(args.tenant)
            svc.sso_signin.check_issuer(args.issuer)  # its discovery document, before anything is stored
            config = svc.sso.set(tenant, "", "cli", args.issuer, args.client_id, secret, args.domains,
                                 args.admin_group or "", passwords=not args.no_passwords)
        except (SsoError, OidcError, TenantError) as exc:
            return _fail(str(exc))
        callback = _callback(svc)
    print(f"tenant {config.tenant_slug!r} signs in through {config.issuer} for {', '.join(config.domains)}"
          + (f"; members of {config.admin_group!r} become admins" if config.admin_group else "")
          + ("" if config.passwords else "; passwords are off for these domains"))
    print(f"register this redirect URI with the provider: {callback}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            tenant = svc.tenants.get(args.tenant)
        except TenantError as exc:
            return _fail(str(exc))
        config = svc.sso.get(tenant)
        callback = _callback(svc)
    if args.json:
        print(json.dumps({**config.to_json(), "redirect_uri": callback} if config else None, ensure_ascii=False))
        return EXIT_OK
    if config is None:
        print(f"tenant {args.tenant!r} signs in with passwords only; `r42 sso set --tenant {args.tenant} ...` "
              "connects its identity provider")
        return EXIT_OK
    for label, value in (("issuer", config.issuer), ("client id", config.client_id), ("client secret", "(set)"),
                         ("domains", ", ".join(config.domains)), ("admin group", config.admin_group or "(none)"),
                         ("passwords", "on" if config.passwords else "off"), ("redirect URI", callback)):
        print(f"{label:<14}{value}")
    return EXIT_OK


def cmd_off(args: argparse.Namespace) -> int:
    with connected(load_settings()) as svc:
        try:
            tenant = svc.tenants.get(args.tenant)
        except TenantError as exc:
            return _fail(str(exc))
        changed = svc.sso.off(tenant, "", "cli")
    print(f"tenant {args.tenant!r}: single sign-on switched off; its people sign in with a password again"
          if changed else f"tenant {args.tenant!r} had no single sign-on; nothing changed")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    sso = sub.add_parser("sso", help="sign in with the organisation's identity provider (OIDC): set, show, off")
    ssub = sso.add_subparsers(dest="sso_command", required=True)
    one = ssub.add_parser("set", help="connect (or change) a tenant's identity provider")
    one.add_argument("--tenant", required=True, help="the tenant's slug")
    one.add_argument("--issuer", required=True, help="the provider's issuer URL (its discovery document is read)")
    one.add_argument("--client-id", required=True)
    one.add_argument("--client-secret-file", required=True, help="a file holding the client secret (never printed)")
    one.add_argument("--domains", required=True, help="e-mail domains that sign in here: a.nl,b.nl")
    one.add_argument("--admin-group", help="members of this group (the `groups` claim) become admins")
    one.add_argument("--no-passwords", action="store_true", help="people of these domains cannot use a password")
    one.set_defaults(func=cmd_set)
    show = ssub.add_parser("show", help="a tenant's identity provider (never its secret)")
    show.add_argument("--tenant", required=True)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show)
    off = ssub.add_parser("off", help="disconnect the provider: passwords again")
    off.add_argument("--tenant", required=True)
    off.set_defaults(func=cmd_off)
