"""The `r42` command line: serve, seed, kb import/export.

    r42 serve                              # what `make run` runs
    r42 seed demo
    r42 tenant create --slug SLUG --name NAME | list | rename | disable | enable
    r42 sso set --tenant SLUG --issuer URL --client-id ID --client-secret-file F --domains a.nl | show | off
    r42 lti add --tenant SLUG --issuer ISS --client-id ID --deployment-id D --jwks-url U --auth-url U | list | remove
    r42 user invite|list|role|deactivate|activate|import|reset-link|forget --tenant SLUG ...
    r42 kb import --tenant SLUG FILE
    r42 kb export --tenant SLUG [FILE]
    r42 chatbot access --tenant SLUG [--email E] [--json]
    r42 chatbot user-grant|user-deny|user-inherit --tenant SLUG --email E --capability ID
    r42 chatbot enable|disable --tenant SLUG
    r42 chatbot migrate-legacy --tenant SLUG|* [--dry-run]
    r42 credits show|set|add --tenant SLUG [N] [--unlimited|--limited]
    r42 costs report --tenant SLUG [--since D] [--until D] [--by capability|user|day] [--json|--csv]
    r42 mcp status | demo-server
    r42 outbox retry [--kind index|cost|all]
    r42 doctor [--tenant SLUG] [--json]
    r42 backup create [FILE] | restore FILE [--force]
    r42 restore --from-replica [--at TIME]

Commands that need PocketBase use the running one (R42_PB_URL or 127.0.0.1:R42_PB_PORT) and
otherwise start the embedded one on the data dir for the duration of the command.

One module per area, each registering its commands next to their handlers: serve.py (serve, seed), tenants.py
(tenant), people.py (user; privacy.py its forget), sso.py (sso), lti.py (lti), kb.py
(kb, search, context, eval, worker, chatbot rag-backfill), chatbot.py (capabilities), costs.py (credits,
costs), ops.py (mcp, outbox, doctor, backup, restore); common.py holds the exit codes.
"""

from __future__ import annotations

# first thing, before the slow imports below, so a stop that early is quiet too (cli/stopping.py)
from r42_app.cli.stopping import stop_signals

# isort: split
import argparse

from r42_app.cli import chatbot, costs, gaps, kb, lti, ops, people, serve, sso, tenants
from r42_app.cli.common import EXIT_FAILURE, _err
from r42_app.container import PocketBaseUnreachable


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="r42", description="R42: the knowledge-base-grounded learning assistant")
    sub = parser.add_subparsers(dest="command", required=True)
    # in this order: `r42 --help` lists the commands so
    for area in (serve, tenants, people, sso, lti, kb, chatbot, costs, gaps, ops):
        area.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if stop_signals:  # a stop during the imports that something swallowed
        return 128 + stop_signals[0]
    try:
        return args.func(args)
    except PocketBaseUnreachable as exc:
        _err(str(exc))
        return EXIT_FAILURE
