"""The knowledge-gaps report from the command line (issue 28): `r42 gaps report`."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, time

from r42_app.cli.common import EXIT_OK, day, tenants_named
from r42_app.container import connected
from r42_app.core.gaps import MIN_ASKERS_SHOWN
from r42_app.settings import load_settings


def cmd_gaps_report(args: argparse.Namespace) -> int:
    """Groups of similar questions the knowledge base could not answer, most asked first."""
    cfg = load_settings()
    since = datetime.combine(args.since, time.min, UTC) if args.since else None
    with connected(cfg) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        views = svc.gaps.report(tenant.id, since=since, include_ignored=args.all)
    if args.json:
        print(json.dumps({"groups": [v.to_json() for v in views]}, ensure_ascii=False))
        return EXIT_OK
    if not views:
        print(f"{tenant.slug}: no unanswered questions" + (f" since {args.since}" if args.since else ""))
        return EXIT_OK
    for v in views:
        g = v.gap
        closest = ", ".join(g.closest) or "(no topic came close)"
        askers = f"{g.askers_shown} learners" if g.askers_shown else f"fewer than {MIN_ASKERS_SHOWN} learners"
        print(f"[{v.status}] {g.count}x by {askers}, last {g.last:%Y-%m-%d %H:%M} (id {g.id}); "
              f"closest: {closest}")
        for example in g.examples(5):
            print(f"    - {example}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    gaps = sub.add_parser("gaps", help="what learners ask that the knowledge base cannot answer")
    gaps_sub = gaps.add_subparsers(dest="gaps_command", required=True)
    report = gaps_sub.add_parser("report", help="groups of similar unanswered questions, most asked first")
    report.add_argument("--tenant", required=True)
    report.add_argument("--since", type=day, help="only questions from this UTC day on (YYYY-MM-DD)")
    report.add_argument("--all", action="store_true", help="also the groups an admin chose to ignore")
    report.add_argument("--json", action="store_true",
                        help='{"groups": [{"id", "count", "learners", "last", "examples", "closest", "status"}]}; '
                             f'"learners" is null below {MIN_ASKERS_SHOWN} (no count that points at one person)')
    report.set_defaults(func=cmd_gaps_report)
