"""Privacy from the command line (issues 28 and 44): `r42 user forget` (registered by people.py)."""

from __future__ import annotations

import argparse
import json

from r42_app.cli.common import EXIT_OK, _fail, tenants_named
from r42_app.container import connected
from r42_app.services.store.forget import ForgetError
from r42_app.settings import load_settings


def cmd_user_forget(args: argparse.Namespace) -> int:
    """Delete or anonymise everything of one user (services/store/forget.py says what goes and what stays)."""
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        # the AI cost events still in the outbox go to the cost rows first, so none arrives naming the user later
        svc.cost_persister.drain(wait_for_leases=True)
        try:
            done = svc.forgetter.forget(tenant, args.email)
        except ForgetError as exc:
            return _fail(str(exc))
    if args.json:
        print(json.dumps(done.to_json()))
        return EXIT_OK
    deleted = ", ".join(f"{n} {what}" for what, n in done.deleted.items() if n) or "nothing"
    kept = ", ".join(f"{n} {what}" for what, n in done.anonymised.items() if n) or "nothing"
    print(f"{args.email} is forgotten in {tenant.slug} (pseudonym {done.pseudonym}); deleted: {deleted}; "
          f"kept without the user: {kept}")
    if done.left.get("topics"):
        print(f"topics that still name them (knowledge base content; edit them): {', '.join(done.left['topics'])}")
    if done.left.get("backups"):
        print(f"{len(done.left['backups'])} backup(s) made before still hold them until your retention deletes "
              f"them; a restore of one brings them back, so forget them again after it")
    return EXIT_OK


def register_forget(user_sub: argparse._SubParsersAction) -> None:
    """`r42 user forget`, under the `user` command that cli/people.py makes."""
    forget = user_sub.add_parser("forget", help="delete or pseudonymise everything of one user, and their account "
                                                "(PocketBase's rows, its request log, the MCP demo server's messages)")
    forget.add_argument("--tenant", required=True)
    forget.add_argument("--email", required=True)
    forget.add_argument("--json", action="store_true",
                        help='{"pseudonym", "deleted", "anonymised", "left"}: rows and messages per collection and '
                             'file; "left": topics that still name the user, backups made before')
    forget.set_defaults(func=cmd_user_forget)
