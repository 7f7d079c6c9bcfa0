"""The `r42` command line: serve, seed, kb import/export.

    r42 serve                              # what `make run` runs
    r42 seed demo
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

Commands that need PocketBase use the running one (R42_PB_URL or 127.0.0.1:R42_PB_PORT) and
otherwise start the embedded one on the data dir for the duration of the command.
"""

from __future__ import annotations

import signal
import sys


def _quiet_exit(signum, frame):  # noqa: ARG001 - signal handler signature
    """Ctrl-C or SIGTERM while the command is still starting (or outside `serve`): stop, without a traceback."""
    raise SystemExit(128 + signum)


# first thing, before the slow imports below, so a stop that early is quiet too
signal.signal(signal.SIGINT, _quiet_exit)
signal.signal(signal.SIGTERM, _quiet_exit)

import argparse
import contextlib
import csv
import dataclasses
import json
import time
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from r42_app.container import PocketBaseUnreachable, Services, connected, pocketbase_running
from r42_app.core.capabilities import CAPABILITIES, DENY, GRANT, INHERIT
from r42_app.core.costs import USD_PER_CREDIT, TenantCredits
from r42_app.core.identity import Tenant
from r42_app.core.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from r42_app.core.retrieval import render_snippets
from r42_app.services.outbox.indexer import requeue_failed
from r42_app.services.retrieval import MODES, UnknownTenant
from r42_app.services.runtime import supervisor
from r42_app.services.store.access import AccessError, AccessStore
from r42_app.services.store.costs import OUTBOX_COST, CreditError
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBError
from r42_app.services.store.pb import PBError
from r42_app.services.store.seed import ensure_mcp_config, seed_demo
from r42_app.settings import MAX_BACKEND_WORKERS, Settings, load_settings

EXIT_INVALID = 2


def _err(message: str) -> None:
    print(f"r42: {message}", file=sys.stderr)


# -- serve ---------------------------------------------------------------------------


def _seed_the_demo(cfg: Settings) -> Callable[[str, Callable[[str], None]], None]:
    """What `serve` does once PocketBase answers: (re)seed the demo tenants and write the demo MCP servers."""
    def seed(pb_url: str, say: Callable[[str], None]) -> None:
        seeding = Services(dataclasses.replace(cfg, pb_url_override=pb_url))
        try:
            seed_demo(seeding.admin_pb, cfg.demo_password, log=say)
            if not cfg.mcp_config and ensure_mcp_config(cfg.mcp_config_file, cfg.mcp_demo_messages):
                say(f"wrote the demo MCP servers to {cfg.mcp_config_file}")
        finally:
            seeding.close()
    return seed


def cmd_serve(args: argparse.Namespace) -> int:
    """PocketBase, the sidecars and the web app, run by services/runtime/supervisor.py."""
    cfg = load_settings()
    workers = args.workers or cfg.backend_workers
    if not 1 <= workers <= MAX_BACKEND_WORKERS:
        _err(f"--workers must be from 1 to {MAX_BACKEND_WORKERS}, got {workers}")
        return 2
    stopped_cleanly = supervisor.serve(cfg, workers=workers, chroma_server=args.chroma_server, loglevel=args.loglevel,
                                       start_timeout=args.start_timeout,
                                       prepare=None if args.no_seed else _seed_the_demo(cfg))
    return 0 if stopped_cleanly else 1


# -- seed / kb -----------------------------------------------------------------------


def cmd_seed(args: argparse.Namespace) -> int:
    cfg = load_settings()
    try:
        with connected(cfg) as svc:
            seed_demo(svc.admin_pb, cfg.demo_password)
    except (PBError, KBError, ValueError) as exc:
        _err(str(exc))
        return 1
    return 0


def _progress(label: str):
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if total and (done == total or now - last[0] > 0.2):
            last[0] = now
            width = 30
            filled = int(width * done / total)
            end = "\n" if done == total else ""
            print(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr, flush=True)

    return report


def cmd_kb_import(args: argparse.Namespace) -> int:
    cfg = load_settings()
    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        _err(f"{path}: no such file")
        return EXIT_INVALID
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        _err(f"{path}: not valid JSON ({exc}); nothing was written")
        return EXIT_INVALID
    try:
        with connected(cfg) as svc:
            store = svc.kb
            plan, issues = store.validate_import(args.tenant, data)
            if plan is None:
                _err(f"{path}: {len(issues)} problem(s); nothing was written")
                for issue in issues[:50]:
                    print(f"  {issue}", file=sys.stderr)
                if len(issues) > 50:
                    print(f"  ... and {len(issues) - 50} more", file=sys.stderr)
                return EXIT_INVALID
            result = store.import_document(args.tenant, data, progress=_progress("writing"), tenant_name=args.name)
            if not args.no_index:
                _index_now(svc, result.tenant.id)
    except KBError as exc:
        _err(str(exc))
        return EXIT_INVALID if exc.issues else 1
    except PBError as exc:
        _err(str(exc))
        return 1
    if result.created_tenant:
        print(f"created tenant {result.tenant.slug!r}")
    print(f"imported {result.summary()}")
    return 0


HANDOFF_TIMEOUT_S = 3600.0  # how long `--now` waits for the app to index what it queued


def _index_now(services: Services, tenant_id: str | None) -> None:
    """Drain the tenant's pending outbox rows now, with a progress bar, so search sees every topic. When another
    process (the running app) writes the embedded index, it does the indexing: this waits for it to finish."""
    total = services.indexer.pending_count(tenant_id)
    if total == 0:
        return
    bar = _progress("indexing")
    if not services.vectors.can_write():
        print("the running app indexes these topics (it holds the embedded index); waiting for it "
              "(Ctrl-C stops waiting, the app goes on)", file=sys.stderr, flush=True)
        deadline = time.monotonic() + HANDOFF_TIMEOUT_S
        left = total
        while left and time.monotonic() < deadline:
            bar(total - left, total)
            time.sleep(1.0)
            left = services.indexer.pending_count(tenant_id)
        bar(total - left, total)
        if left:
            _err(f"{left} topic(s) still wait in the outbox; the app goes on indexing them")
        else:
            print(f"the app indexed {total} topic(s)")
        return
    done = [0]

    def step(n: int) -> None:
        done[0] += n
        bar(min(done[0], total), total)

    stats = services.indexer.drain(tenant_id, progress=step)
    if done[0] < total:
        bar(total, total)
    if stats.failed_rows:
        _err(f"{stats.failed_rows} topic(s) could not be indexed yet (see `last_error` in the outbox); "
             "they are retried by the app or `r42 worker`")
    else:
        print(f"indexed {stats.topics_indexed} topics ({stats.passages} new passages embedded) in {stats.seconds:.1f}s")


def cmd_kb_export(args: argparse.Namespace) -> int:
    cfg = load_settings()
    try:
        with connected(cfg) as svc:
            doc = svc.kb.export_document(args.tenant)
    except KBError as exc:
        _err(str(exc))
        return EXIT_INVALID
    except PBError as exc:
        _err(str(exc))
        return 1
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if args.file and args.file != "-":
        Path(args.file).write_text(text, encoding="utf-8")
        print(f"exported {len(doc['topics'])} topics and {len(doc['relations'])} relations to {args.file}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


# -- retrieval ------------------------------------------------------------------------


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    """Lines of a JSONL file, each an object with the required keys; SystemExit(2) naming the bad line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError) as exc:
        raise SystemExit(_fail(f"{path}: {exc}"))
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(_fail(f"{path}:{n}: not valid JSON ({exc.msg})"))
        missing = [k for k in required if not isinstance(obj, dict) or k not in obj]
        if missing:
            raise SystemExit(_fail(f"{path}:{n}: missing {', '.join(missing)}"))
        out.append(obj)
    return out


def _fail(message: str) -> int:
    _err(message)
    return EXIT_INVALID


@contextlib.contextmanager
def tenant_services(cfg: Settings, tenant_slug: str) -> Iterator[tuple[Services, Tenant]]:
    """Services on a superuser connection plus the named tenant; an unknown tenant exits with status 2."""
    with connected(cfg) as services:
        try:
            tenant = services.retriever.tenant(tenant_slug)
        except UnknownTenant as exc:
            raise SystemExit(_fail(str(exc))) from exc
        yield services, tenant


def cmd_search(args: argparse.Namespace) -> int:
    cfg = load_settings()
    if args.batch is None and not (args.query or "").strip():
        return _fail("the query is empty (give QUERY or --batch FILE)")
    queries = _read_jsonl(Path(args.batch), ("qid", "query")) if args.batch else None
    with tenant_services(cfg, args.tenant) as (services, tenant):
        if queries is not None:
            for q in queries:
                res = services.retriever.kb_search(tenant, str(q["query"]), args.mode, args.top_k)
                print(json.dumps({"qid": q["qid"], "mode_used": res.mode_used,
                                  "results": [{"id": h.slug, "score": round(h.score, 6)} for h in res.hits]},
                                 ensure_ascii=False), flush=True)
            return 0
        res = services.retriever.kb_search(tenant, args.query, args.mode, args.top_k)
    if args.json:
        print(json.dumps({"query": args.query, "mode": res.mode, "mode_used": res.mode_used, "kb_hash": res.kb_hash,
                          "results": [{"id": h.slug, "label": h.label, "type": h.type, "score": round(h.score, 6)}
                                      for h in res.hits]}, ensure_ascii=False, indent=2))
        return 0
    note = "" if res.mode_used == res.mode else f" (fell back from {res.mode})"
    print(f"{len(res.hits)} result(s), mode {res.mode_used}{note}, kb {res.kb_hash}")
    for n, h in enumerate(res.hits, start=1):
        print(f"{n:>3}. {h.score:8.4f}  {h.slug:<34} {h.label} ({h.type})")
    if not res.hits:
        print("   no topic matches; try other words")
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    cfg = load_settings()
    if not args.query.strip():
        return _fail("the query is empty")
    with tenant_services(cfg, args.tenant) as (services, tenant):
        context = services.retriever.build_kb_context(tenant, args.query)
        res = services.retriever.kb_search(tenant, args.query, args.mode, args.top_k)
        snippets = res.snippets(services.retriever.index(tenant))
    print(context.text)
    print(f"\nRAG SNIPPETS (mode {res.mode_used})")
    print(render_snippets(snippets) if snippets else "(none)")
    return 0


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    cfg = load_settings()
    queries = _read_jsonl(Path(args.queries), ("qid", "query", "rel"))
    if not queries:
        return _fail(f"{args.queries}: no queries")
    with tenant_services(cfg, args.tenant) as (services, tenant):
        rows = {}
        kinds = sorted({q.get("kind", "") for q in queries} - {""})
        for mode in args.modes:
            ndcg, recall, mrr, used, fell_back = [], [], [], set(), 0
            by_kind: dict[str, list[float]] = {k: [] for k in kinds}
            for q in queries:
                res = services.retriever.kb_search(tenant, q["query"], mode, args.k)
                ranked = [h.slug for h in res.hits]
                used.add(res.mode_used)
                fell_back += res.mode_used != mode
                ndcg.append(ndcg_at_k(ranked, q["rel"], args.k))
                if q.get("kind"):
                    by_kind[q["kind"]].append(ndcg[-1])
                recall.append(recall_at_k(ranked, q["rel"], args.k))
                mrr.append(mrr_at_k(ranked, q["rel"], args.k))
            n = len(queries)
            rows[mode] = {"ndcg": sum(ndcg) / n, "recall": sum(recall) / n, "mrr": sum(mrr) / n,
                          "mode_used": ",".join(sorted(used)), "fallbacks": fell_back,
                          "ndcg_by_kind": {k: sum(v) / len(v) for k, v in by_kind.items()}}
    if args.json:
        print(json.dumps({"queries": len(queries), "k": args.k, "modes": rows}, indent=2))
        return 0
    k = args.k
    print(f"{len(queries)} queries, tenant {args.tenant}")
    kind_cols = "".join(f" nDCG@{k} {kind} |" for kind in kinds)
    print(f"| mode | nDCG@{k} | Recall@{k} | MRR@{k} | fell back |{kind_cols}")
    print("|---" * (5 + len(kinds)) + "|")
    for mode, r in rows.items():
        used = "" if r["mode_used"] == mode else f" (ran as {r['mode_used']})"
        per_kind = "".join(f" {r['ndcg_by_kind'][kind]:.3f} |" for kind in kinds)
        print(f"| {mode}{used} | {r['ndcg']:.3f} | {r['recall']:.3f} | {r['mrr']:.3f} | {r['fallbacks']} |{per_kind}")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """The outbox consumers as a process of their own: `--role index` (Chroma), `cost` (AI cost events)
    or `all`. Several may run at once, on one machine or several: rows are leased (services/outbox/outbox.py)."""
    import asyncio

    cfg = load_settings()
    roles = ("index", "cost") if args.role == "all" else (args.role,)
    with connected(cfg, wait_s=0 if args.once else 120) as svc:
        indexer = svc.indexer if "index" in roles else None
        if indexer is not None and not indexer.vectors.can_write():
            _err(f"another process (the app?) writes the embedded index in {cfg.chroma_dir}, and two writers "
                 "corrupt it: run the app with R42_APP_INDEXER=0, or a Chroma server for every process "
                 "(`r42 serve --chroma-server`, CHROMA_URL)")
            return 1
        costs = svc.cost_persister if "cost" in roles else None
        if indexer is not None:
            indexer.rows_per_run = args.batch_size
        tenant_id = None
        if args.tenant:
            if args.role != "index" or not args.once:
                _err("--tenant applies to --once --role index only")
                return 2
            try:
                tenant_id = svc.kb.require_tenant(args.tenant).id
            except KBError as exc:
                _err(str(exc))
                return 2
        if args.once:
            summary: dict = {"role": args.role}
            failed = 0
            if indexer is not None:
                summary["worker"] = indexer.worker
                stats = indexer.drain(tenant_id, wait_for_leases=True)
                summary.update(rows=stats.rows, topics_indexed=stats.topics_indexed,
                               topics_deleted=stats.topics_deleted, passages=stats.passages, index_failed_rows=stats.failed_rows)
                failed += stats.failed_rows
            if costs is not None:
                spent = costs.drain(wait_for_leases=True)
                summary.update(cost_events=spent.events, cost_duplicates=spent.duplicates,
                               cost_failed_rows=spent.failed_rows)
                failed += spent.failed_rows
            if args.json:
                print(json.dumps(summary))
            else:
                parts = []
                if indexer is not None:
                    parts.append(f"indexed {summary['topics_indexed']} topics ({summary['passages']} new passages), deleted "
                                 f"{summary['topics_deleted']}, {summary['index_failed_rows']} row(s) failed")
                if costs is not None:
                    parts.append(f"persisted {summary['cost_events']} cost event(s) ({summary['cost_duplicates']} "
                                 f"already there), {summary['cost_failed_rows']} row(s) failed")
                print("; ".join(parts))
            return 1 if failed else 0
        print(f"r42 worker ({args.role}): draining the outbox (Ctrl-C to stop)", flush=True)
        stop = asyncio.Event()

        async def run() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            jobs = []
            if indexer is not None:
                jobs.append(indexer.run_forever(interval=args.interval, stop=stop))
            if costs is not None:
                jobs.append(costs.run_forever(interval=args.interval, stop=stop))
            await asyncio.gather(*jobs)

        asyncio.run(run())
        print(f"r42 worker ({args.role}): stopped", flush=True)
    return 0


def cmd_rag_backfill(args: argparse.Namespace) -> int:
    cfg = load_settings()
    with connected(cfg) as svc:
        services = svc
        if args.tenant == "*":
            tenants = [services.kb.require_tenant(row["slug"]) for row in svc.admin_pb.all("tenants", fields="slug")]
        else:
            try:
                tenants = [services.kb.require_tenant(args.tenant)]
            except KBError as exc:
                return _fail(str(exc))
        if args.rebuild:
            if not services.vectors.can_write():
                return _fail("the running app holds the embedded index: stop it first (Ctrl-C), then rebuild")
            for tenant in tenants:
                services.vectors.drop(tenant.id)
                for name in services.vectors.other_models(tenant.id):
                    services.vectors.drop_collection(name)
            print(f"dropped the stored vectors of {len(tenants)} tenant(s)")
        total = sum(services.kb.emit_reindex(t) for t in tenants)
        print(f"queued {total} topic(s) of {len(tenants)} tenant(s) for indexing")
        if args.now:
            _index_now(services, None if args.tenant == "*" else tenants[0].id)
        else:
            print("the running app or `r42 worker` indexes them (or run again with --now)")
    return 0


# -- capabilities (issue 11) -------------------------------------------------------------


def _capability_tenants(svc: Services, slug: str) -> list[Tenant]:
    """The tenant named by slug (or every tenant for *); an unknown slug exits with status 2."""
    kb, pb = svc.kb, svc.admin_pb
    if slug == "*":
        return [kb.require_tenant(row["slug"]) for row in pb.all("tenants", fields="slug", sort="slug")]
    tenant = kb.tenant(slug)
    if tenant is None:
        known = ", ".join(row["slug"] for row in pb.all("tenants", fields="slug", sort="slug"))
        raise SystemExit(_fail(f"unknown tenant {slug!r}; tenants: {known or '(none)'}"))
    return [tenant]


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
        tenant = _capability_tenants(svc, args.tenant)[0]
        user = _user_of(store, tenant, args.email)
        _chatbot, before = store.effective(tenant.id, user["id"])
        try:
            store.set_override(tenant, user["id"], args.capability, value, "", "cli")
        except AccessError as exc:
            return _fail(str(exc))
        _chatbot, after = store.effective(tenant.id, user["id"])
    print(f"{user['email']}: {args.capability} = {value}; effective {_caps(before.effective)} -> {_caps(after.effective)}")
    return 0


def cmd_chatbot_switch(args: argparse.Namespace) -> int:
    """enable / disable: the tenant's master switch."""
    enabled = args.chatbot_command == "enable"
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = _capability_tenants(svc, args.tenant)[0]
        changed = svc.access.set_enabled(tenant, enabled, "", "cli")
    state = "on" if enabled else "off"
    print(f"R42 is {state} for {tenant.slug}" + ("" if changed else " (it already was)"))
    return 0


def cmd_chatbot_access(args: argparse.Namespace) -> int:
    """Users x capabilities of a tenant, and each user's effective set."""
    cfg = load_settings()
    with connected(cfg) as svc:
        store = svc.access
        tenant = _capability_tenants(svc, args.tenant)[0]
        chatbot = store.tenant_chatbot(tenant.id)
        users = store.users(tenant)
        if args.email:
            users = [u for u in users if u.email == args.email.strip()]
            if not users:
                _user_of(store, tenant, args.email)
    rows = []
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
        return 0
    print(f"{tenant.slug}: R42 {'on' if chatbot.enabled else 'OFF'}; default {_caps(chatbot.default)}")
    header = ["email", "role", *CAPABILITIES, "effective"]
    table = [[r["email"], r["role"], *(("list" if r["legacy_list"] is not None else r["overrides"][c])
                                       for c in CAPABILITIES), ",".join(r["effective"]) or "-"] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table)]
    for line in [header, *table]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())
    return 0


def cmd_chatbot_migrate(args: argparse.Namespace) -> int:
    """migrate-legacy: exact lists -> overrides with the same effective set, printed before and after."""
    cfg = load_settings()
    with connected(cfg) as svc:
        store = svc.access
        total = 0
        for tenant in _capability_tenants(svc, args.tenant):
            try:
                done = store.migrate_legacy(tenant, None, "", "cli", dry_run=args.dry_run)
            except AccessError as exc:
                return _fail(str(exc))
            for user, after in done:
                print(f"{tenant.slug}  {user.email}: {_caps(user.resolution.effective)} -> {_caps(after)}")
            total += len(done)
    print(f"{total} legacy row(s) " + ("would be migrated (dry run: nothing written)" if args.dry_run else "migrated"))
    return 0


# -- credits (issue 12) ---------------------------------------------------------------------


def _credits_line(tenant: Tenant, c: TenantCredits) -> str:
    amount = "unlimited" if c.unlimited else f"{c.credits:.2f} credits (USD {c.credits * USD_PER_CREDIT:.2f})"
    return f"{tenant.slug}: {amount}" + (f", plan {c.plan}" if c.plan else "")


def cmd_credits(args: argparse.Namespace) -> int:
    """show / set / add a tenant's AI credits (1 credit = USD 0.001); --unlimited switches the plan flag."""
    if args.credits_command in ("set", "add") and args.amount is None and args.unlimited is None:
        return _fail(f"`r42 credits {args.credits_command}` needs an amount of credits, or --unlimited/--limited")
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = _capability_tenants(svc, args.tenant)[0]
        store = svc.credits
        if args.credits_command == "show":
            print(_credits_line(tenant, store.show(tenant)))
            return 0
        kind = {"set": "set_to", "add": "add"}[args.credits_command]
        try:
            after = store.change(tenant, "", "cli", unlimited=args.unlimited,
                                 **({kind: args.amount} if args.amount is not None else {}))
        except CreditError as exc:
            return _fail(str(exc))
    print(_credits_line(tenant, after))
    return 0


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2026-12-01") from exc


def cmd_costs_report(args: argparse.Namespace) -> int:
    """A tenant's AI cost for a range of UTC days, grouped by capability, user or day."""
    today = datetime.now(timezone.utc).date()
    since, until = args.since or today.replace(day=1), args.until or today
    cfg = load_settings()
    with connected(cfg) as svc:
        tenant = _capability_tenants(svc, args.tenant)[0]
        try:
            report = svc.cost_reports.report(tenant, since, until)
        except ValueError as exc:
            return _fail(str(exc))
        left = svc.credits.show(tenant)
    if args.by == "day":
        lines = [(d, sum(report.by_day[d].values())) for d in report.days]
        rows = [{"day": d, "cost_usd": round(usd, 6)} for d, usd in lines]
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
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else [args.by])
        writer.writeheader()
        writer.writerows(rows)
        return 0
    print(f"{tenant.slug}, {report.since} to {report.until} (UTC): {total.events} events, USD {total.cost_usd:.4f}, "
          f"{total.credits:.2f} credits; cache reads {total.cache_read_share:.0%} of input; "
          + ("credits left: unlimited" if left.unlimited else f"credits left: {left.credits:.2f}"))
    if rows:
        header = list(rows[0])
        widths = [max(len(str(h)), *(len(str(r[h])) for r in rows)) for h in header]
        for line in [dict(zip(header, header)), *rows]:
            print("  ".join(str(line[h]).ljust(w) for h, w in zip(header, widths)).rstrip())
    return 0


# -- MCP (issue 13) -------------------------------------------------------------------------


def cmd_mcp_demo_server(_args: argparse.Namespace) -> int:
    """R42's demo MCP server on stdio (configured for the demo in mcp.json)."""
    from r42_app.mcp_demo_server import main as demo_main

    return demo_main()


def cmd_mcp_status(args: argparse.Namespace) -> int:
    """Connect to every configured MCP server once and list it with its tools and their risk."""
    import asyncio

    from r42_app.services.adapters.mcp import DEFAULT_REGISTRY

    cfg = load_settings()
    hub = Services(cfg).mcp_hub  # this process's own: nothing else here uses the registry it fills
    registry = DEFAULT_REGISTRY
    if hub.config_error:
        return _fail(hub.config_error)

    async def check() -> tuple[float, list]:
        try:
            took = await hub.start(wait=args.wait)
            return took, [dataclasses.replace(s, tools=list(s.tools)) for s in hub.statuses()]
        finally:
            await hub.stop()

    if not hub.connections:
        print(f"no MCP servers configured ({cfg.mcp_config_file}{'' if cfg.mcp_enabled else '; R42_MCP_ENABLED=false'})")
        return 0
    took, statuses = asyncio.run(check())
    print(f"{cfg.mcp_config_file}: {len(statuses)} server(s), checked in {took:.1f} s")
    failed = 0
    for status in statuses:
        ok = status.state == "connected"
        failed += 0 if ok else 1
        print(f"  {status.name} ({status.transport}): {'connected' if ok else 'FAILED: ' + status.last_error}")
        for name in status.tools:
            entry = registry.get(name)
            print(f"    {name}  risk {entry.risk if entry else '?'}")
    return 1 if failed else 0


def cmd_outbox_retry(args: argparse.Namespace) -> int:
    """Re-queue `failed` outbox rows now (they are retried hourly anyway)."""
    kinds = {"index": (OUTBOX_UPSERT, OUTBOX_DELETE), "cost": (OUTBOX_COST,)}
    types = kinds.get(args.kind, kinds["index"] + kinds["cost"])
    cfg = load_settings()
    with connected(cfg) as svc:
        count = requeue_failed(svc.admin_pb, types)
    print(f"{count} failed outbox row(s) queued again; the app or `r42 worker` picks them up")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check everything R42 needs; exit status 1 when anything FAILs."""
    from r42_app.services.runtime.doctor import FAIL, Doctor

    cfg = load_settings()
    with connected(cfg) as svc:
        services = svc
        try:
            checks = Doctor(cfg, svc.admin_pb, services.embedder, services.vectors).run(args.tenant)
        except KBError as exc:
            return _fail(str(exc))
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], ensure_ascii=False, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
            if c.fix and c.status != "OK":
                print(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    return 1 if any(c.status == FAIL for c in checks) else 0


def cmd_backup(args: argparse.Namespace) -> int:
    """create: PocketBase's own backup, downloaded to FILE; restore: put one back (PocketBase restarts)."""
    from r42_app.services.store.backup import BackupError, create_backup, restore_backup

    cfg = load_settings()
    if args.backup_command == "restore":
        source = Path(args.file)
        if not source.is_file():
            return _fail(f"{source} is not a file")
        running = pocketbase_running(cfg)
        if running and not args.force:
            return _fail(f"PocketBase at {cfg.pb_url} is running: restoring replaces all of its data. Stop R42 "
                         "first, or add --force to restore into the running instance.")
    with connected(cfg) as svc:
        try:
            if args.backup_command == "create":
                target = create_backup(svc.admin_pb, Path(args.file) if args.file else cfg.data_dir / "backups")
                print(f"backup written to {target} ({target.stat().st_size / 1_000_000:.1f} MB); the search index "
                      "is not in it: `r42 chatbot rag-backfill --tenant '*' --now` rebuilds it after a restore")
            else:
                restore_backup(svc.admin_pb, Path(args.file))
                print(f"restored {args.file}; now rebuild the search index: "
                      "r42 chatbot rag-backfill --tenant '*' --now")
        except BackupError as exc:
            return _fail(str(exc))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="r42", description="R42: the knowledge-base-grounded learning assistant")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="start PocketBase, seed the demo and serve the web app")
    serve.add_argument("--no-seed", action="store_true", help="do not (re)seed the demo tenants")
    serve.add_argument("--start-timeout", type=float, default=600, help="seconds to wait for the web app (default 600)")
    serve.add_argument("--loglevel", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--workers", type=int, default=0,
                       help="backend worker processes sharing state through Redis (default R42_BACKEND_WORKERS or 1)")
    serve.add_argument("--chroma-server", action="store_true",
                       help="serve the search index from a `chroma run` process (always, with several workers)")
    serve.set_defaults(func=cmd_serve)

    seed = sub.add_parser("seed", help="load demo data")
    seed.add_argument("what", choices=["demo"], help="what to seed")
    seed.set_defaults(func=cmd_seed)

    kb = sub.add_parser("kb", help="import or export a tenant's knowledge base")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    imp = kb_sub.add_parser("import", help="validate a JSON file, then upsert its topics and relations")
    imp.add_argument("--tenant", required=True, help="tenant slug (created if missing)")
    imp.add_argument("--name", help="display name when the tenant is created")
    imp.add_argument("file", help='JSON file {"topics": [...], "relations": [...]}')
    imp.add_argument("--no-index", action="store_true", help="leave indexing to the app or `r42 worker`")
    imp.set_defaults(func=cmd_kb_import)
    exp = kb_sub.add_parser("export", help="write a tenant's knowledge base as JSON")
    exp.add_argument("--tenant", required=True)
    exp.add_argument("file", nargs="?", help="output file (default: stdout)")
    exp.set_defaults(func=cmd_kb_export)

    def retrieval_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--tenant", required=True)
        p.add_argument("--mode", choices=MODES, default="hybrid")
        p.add_argument("--top-k", type=int, default=5)
        return p

    search = retrieval_args(sub.add_parser("search", help="search a tenant's knowledge base"))
    search.add_argument("--json", action="store_true", help="print JSON")
    search.add_argument("--batch", metavar="FILE", help='JSONL lines {"qid", "query"}; prints one JSON line per query')
    search.add_argument("query", nargs="?", default="")
    search.set_defaults(func=cmd_search)

    context = retrieval_args(sub.add_parser("context", help="print the KB context block and RAG snippets for a message"))
    context.add_argument("query")
    context.set_defaults(func=cmd_context)

    ev = sub.add_parser("eval", help="evaluate retrieval quality")
    ev_sub = ev.add_subparsers(dest="eval_command", required=True)
    evr = ev_sub.add_parser("retrieval", help="nDCG@10, Recall@10 and MRR@10 per mode")
    evr.add_argument("--tenant", required=True)
    evr.add_argument("--queries", required=True, help='JSONL lines {"qid", "query", "rel": {slug: grade}}')
    evr.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    evr.add_argument("--k", type=int, default=10)
    evr.add_argument("--json", action="store_true")
    evr.set_defaults(func=cmd_eval_retrieval)

    worker = sub.add_parser("worker", help="drain the outbox: index the knowledge base, persist AI cost events")
    worker.add_argument("--role", choices=("index", "cost", "all"), default="all",
                        help="index: the search index; cost: AI cost events; all: both (default)")
    worker.add_argument("--once", action="store_true",
                        help="drain what is pending (waiting for rows other workers hold) and exit")
    worker.add_argument("--json", action="store_true", help="with --once: print the summary as JSON")
    worker.add_argument("--tenant", help="with --once --role index: only this tenant's rows (slug)")
    worker.add_argument("--interval", type=float, default=1.0, help="seconds between polls (default 1)")
    worker.add_argument("--batch-size", type=int, default=256, help="outbox rows per batch (default 256)")
    worker.set_defaults(func=cmd_worker)

    chatbot = sub.add_parser("chatbot", help="assistant operations")
    chatbot_sub = chatbot.add_subparsers(dest="chatbot_command", required=True)
    backfill = chatbot_sub.add_parser("rag-backfill", help="queue every topic for (re)indexing")
    backfill.add_argument("--tenant", required=True, help="tenant slug, or * for all tenants")
    backfill.add_argument("--now", action="store_true", help="index right away instead of leaving it to the worker")
    backfill.add_argument("--rebuild", action="store_true",
                          help="drop the tenant's stored vectors first (a damaged or bloated index: `r42 doctor` says)")
    backfill.set_defaults(func=cmd_rag_backfill)
    for name, what in (("user-grant", "grant"), ("user-deny", "deny"), ("user-inherit", "inherit (follow the default)")):
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
    migrate = chatbot_sub.add_parser("migrate-legacy", help="turn legacy exact lists into overrides (same effective set)")
    migrate.add_argument("--tenant", required=True, help="tenant slug, or * for all tenants")
    migrate.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    migrate.set_defaults(func=cmd_chatbot_migrate)

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
    report.add_argument("--since", type=_date, help="first day, YYYY-MM-DD (default: the 1st of this month)")
    report.add_argument("--until", type=_date, help="last day, YYYY-MM-DD (default: today)")
    report.add_argument("--by", choices=["capability", "user", "day"], default="capability")
    fmt = report.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true", help="the grouped rows as CSV")
    report.set_defaults(func=cmd_costs_report)

    backup = sub.add_parser("backup", help="back up or restore PocketBase's data (its own backup API)")
    backup_sub = backup.add_subparsers(dest="backup_command", required=True)
    create = backup_sub.add_parser("create", help="make a backup and save it to FILE (default data/backups/)")
    create.add_argument("file", nargs="?")
    create.set_defaults(func=cmd_backup)
    restore = backup_sub.add_parser("restore", help="restore FILE (all current data is replaced)")
    restore.add_argument("file")
    restore.add_argument("--force", action="store_true", help="also into a running instance")
    restore.set_defaults(func=cmd_backup)

    doctor = sub.add_parser("doctor", help="check PocketBase, the model, the index, the outbox, costs, MCP")
    doctor.add_argument("--tenant", help="only this tenant's index, capabilities and credits")
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(func=cmd_doctor)

    outbox = sub.add_parser("outbox", help="the work queue of indexing and AI cost events")
    outbox_sub = outbox.add_subparsers(dest="outbox_command", required=True)
    retry = outbox_sub.add_parser("retry", help="queue failed rows again now")
    retry.add_argument("--kind", choices=["index", "cost", "all"], default="all")
    retry.set_defaults(func=cmd_outbox_retry)

    mcp = sub.add_parser("mcp", help="external tools over the Model Context Protocol")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    demo = mcp_sub.add_parser("demo-server", help="run R42's demo MCP server on stdio")
    demo.set_defaults(func=cmd_mcp_demo_server)
    status = mcp_sub.add_parser("status", help="connect to the configured MCP servers once and list their tools")
    status.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the servers (default 20)")
    status.set_defaults(func=cmd_mcp_status)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PocketBaseUnreachable as exc:
        _err(str(exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
