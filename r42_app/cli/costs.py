"""AI credits and costs from the command line (issue 12): `credits show|set|add` and `costs report`."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import UTC, datetime
from typing import Any

from r42_app.cli.common import EXIT_OK, _fail, day, exit_code_of, tenants_named
from r42_app.container import connected
from r42_app.core.costs import USD_PER_CREDIT, TenantCredits
from r42_app.core.identity import Tenant
from r42_app.services.store.costs import CreditError
from r42_app.settings import load_settings


def _credits_line(tenant: Tenant, c: TenantCredits) -> str:
    amount = "unlimited" if c.unlimited else f"{c.credits:.2f} credits (USD {c.credits * USD_PER_CREDIT:.2f})"
    return f"{tenant.slug}: {amount}" + (f", plan {c.plan}" if c.plan else "")


def cmd_credits(args: argparse.Namespace) -> int:
    """show / set / add a tenant's AI credits (1 credit = USD 0.001); --unlimited switches the plan flag."""
    if args.credits_command in ("set", "add") and args.amount is None and args.unlimited is None:
        return _fail(f"`r42 credits {args.credits_command}` needs an amount of credits, or --unlimited/--limited")
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        store = svc.credits
        if args.credits_command == "show":
            print(_credits_line(tenant, store.show(tenant)))
            return EXIT_OK
        kind = {"set": "set_to", "add": "add"}[args.credits_command]
        try:
            after = store.change(tenant, "", "cli", unlimited=args.unlimited,
                                 **({kind: args.amount} if args.amount is not None else {}))
        except CreditError as exc:
            return _fail(str(exc), exit_code_of(exc))
    print(_credits_line(tenant, after))
    return EXIT_OK



def cmd_costs_report(args: argparse.Namespace) -> int:
    """A tenant's AI cost for a range of UTC days, grouped by capability, user or day."""
    today = datetime.now(UTC).date()
    since, until = args.since or today.replace(day=1), args.until or today
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = tenants_named(svc, args.tenant)[0]
        try:
            report = svc.cost_reports.report(tenant, since, until)
        except ValueError as exc:
            return _fail(str(exc))
        left = svc.credits.show(tenant)
    if args.by == "day":
        lines = [(d, sum(report.by_day[d].values())) for d in report.days]
        rows: list[dict[str, Any]] = [{"day": d, "cost_usd": round(usd, 6)} for d, usd in lines]
    else:
        group = report.by_capability if args.by == "capability" else report.by_user
        rows = [{args.by: line.key, "events": line.events, "input_tokens": line.usage.input_tokens,
                 "output_tokens": line.usage.output_tokens, "cache_write_tokens": line.usage.cache_write_tokens,
                 "cache_read_tokens": line.usage.cache_read_tokens, "cost_usd": round(line.cost_usd, 6),
                 "credits": round(line.credits, 6)} for line in group]
    total = report.total
    if args.json:
        print(json.dumps({"tenant": tenant.slug, "since": report.since, "until": report.until,
                          "total": {"events": total.events, "cost_usd": round(total.cost_usd, 6),
                                    "credits": round(total.credits, 6), "input_tokens": total.usage.input_tokens,
                                    "output_tokens": total.usage.output_tokens,
                                    "cache_write_tokens": total.usage.cache_write_tokens,
                                    "cache_read_tokens": total.usage.cache_read_tokens,
                                    "cache_read_share": round(total.cache_read_share, 4)},
                          "credits_left": None if left.unlimited else left.credits, "by": args.by, "rows": rows},
                         indent=2))
        return EXIT_OK
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else [args.by])
        writer.writeheader()
        writer.writerows(rows)
        return EXIT_OK
    print(f"{tenant.slug}, {report.since} to {report.until} (UTC): {total.events} events, USD {total.cost_usd:.4f}, "
          f"{total.credits:.2f} credits; cache reads {total.cache_read_share:.0%} of input; "
          + ("credits left: unlimited" if left.unlimited else f"credits left: {left.credits:.2f}"))
    if rows:
        header = list(rows[0])
        widths = [max(len(str(h)), *(len(str(r[h])) for r in rows)) for h in header]
        for line in [dict(zip(header, header)), *rows]:
            print("  ".join(str(line[h]).ljust(w) for h, w in zip(header, widths)).rstrip())
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """`credits show|set|add` and `costs report`."""
    credits = sub.add_parser("credits", help="a tenant's AI credits (1 credit = USD 0.001 of model cost)")
    credits_sub = credits.add_subparsers(dest="credits_command", required=True)
    for name, what in (("show", "show the credits left"), ("set", "set the credits to N"),
                       ("add", "add N credits (negative to take some off)")):
        cmd = credits_sub.add_parser(name, help=what)
        cmd.add_argument("--tenant", required=True)
        if name != "show":
            cmd.add_argument("amount", nargs="?", type=float, help="credits")
            plan = cmd.add_mutually_exclusive_group()
            plan.add_argument("--unlimited", dest="unlimited", action="store_const", const=True,
                              help="an unlimited plan: no checks, no debits (costs are still recorded)")
            plan.add_argument("--limited", dest="unlimited", action="store_const", const=False,
                              help="back to counting credits")
        cmd.set_defaults(func=cmd_credits, unlimited=None, amount=None)

    costs = sub.add_parser("costs", help="AI cost reports")
    costs_sub = costs.add_subparsers(dest="costs_command", required=True)
    report = costs_sub.add_parser("report", help="a tenant's AI cost per capability, user or day (UTC days)")
    report.add_argument("--tenant", required=True)
    report.add_argument("--since", type=day, help="first day, YYYY-MM-DD (default: the 1st of this month)")
    report.add_argument("--until", type=day, help="last day, YYYY-MM-DD (default: today)")
    report.add_argument("--by", choices=["capability", "user", "day"], default="capability")
    fmt = report.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true", help="the grouped rows as CSV")
    report.set_defaults(func=cmd_costs_report)
