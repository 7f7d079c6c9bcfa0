"""The knowledge base from the command line: `kb import` / `kb export`, `search`, `context`,
`eval retrieval`, `worker` (the outbox consumers) and `chatbot rag-backfill` (re-index)."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r42_app.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, _err, _fail
from r42_app.container import Services, connected
from r42_app.core.chat import clean_text
from r42_app.core.conversation import Understood
from r42_app.core.documents import EXTENSIONS, DocumentRefused, ParsedDocument, name_key
from r42_app.core.identity import Tenant
from r42_app.core.kb import TOPIC_TYPES
from r42_app.core.messages import msg
from r42_app.core.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from r42_app.core.retrieval import render_snippets
from r42_app.services.retrieval import MODES, UnknownTenant
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError
from r42_app.settings import Settings, load_settings


def _progress(label: str):
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if total and (done == total or now - last[0] > 0.2):
            last[0] = now
            width = 30
            filled = int(width * done / total)
            end = "\n" if done == total else ""
            bar = f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
            print(bar, end=end, file=sys.stderr, flush=True)

    return report


IMPORT_SUFFIXES = (".json", *EXTENSIONS)


def _import_files(paths: list[str]) -> tuple[list[Path], list[str], list[Path]]:
    """(files, problems, skipped): the named files, and the files under named folders (recursively, in name order)
    that `kb import` reads; a folder's other files are skipped, a named file that does not exist is a problem."""
    files: list[Path] = []
    problems: list[str] = []
    skipped: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                (files if child.suffix.lower() in IMPORT_SUFFIXES else skipped).append(child)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{path}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for f in files:  # each file once, however it was named
        if f.resolve() not in seen:
            seen.add(f.resolve())
            unique.append(f)
    return unique, problems, skipped


def _read_json(path: Path) -> tuple[Any, str]:
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{path}: not valid JSON ({exc})"
    except OSError as exc:
        return None, f"{path}: cannot be read ({exc.strerror or exc})"


@dataclass
class CheckedFile:
    """A file `r42 kb import` read and found good: a JSON knowledge base, or a document and what it parsed to."""

    path: Path
    data: Any = None  # the JSON document
    raw: bytes = b""  # a document's bytes ...
    parsed: ParsedDocument | None = None  # ... and what the parse sandbox made of them


def cmd_kb_import(args: argparse.Namespace) -> int:
    """Check every file first (JSON against the KB's rules, documents in the parse sandbox); write only when all
    are good, one file at a time, then index."""
    cfg = load_settings()
    files, problems, skipped = _import_files(args.paths)
    problems += _same_names(files)
    for problem in problems:
        _err(problem)
    if problems:
        _err("nothing was written")
        return EXIT_BAD_INPUT
    if not files:
        _err("no file to import (JSON, PDF, Word, PowerPoint, Markdown, HTML or text)")
        return EXIT_BAD_INPUT
    for path in skipped:
        print(f"skipped {path} (not a kind of file kb import reads)", file=sys.stderr)
    try:
        with connected(cfg) as svc:
            if svc.kb.tenant(args.tenant) is None:  # made on purpose, by `r42 tenant create` (issue 46), never here
                name = args.name or args.tenant.replace("-", " ").title()
                _err(f"unknown tenant {args.tenant!r}: create it first with "
                     f"`r42 tenant create --slug {shlex.quote(args.tenant)} --name {shlex.quote(name)}`; "
                     f"nothing was written")
                return EXIT_BAD_INPUT
            checked = [c for n, path in enumerate(files, start=1)
                       if (c := _check_file(svc, args.tenant, path, f"[{n}/{len(files)}] {path}")) is not None]
            if len(checked) < len(files):
                _err(f"{len(files) - len(checked)} of {len(files)} file(s) cannot be imported; nothing was written")
                return EXIT_BAD_INPUT
            tenant = svc.kb.require_tenant(args.tenant)
            counts = {"created": 0, "updated": 0, "unchanged": 0}
            for one in checked:
                counts[_write_file(svc, tenant, one, args.type)] += 1
            if not args.no_index:
                _index_now(svc, tenant.id)
    except KBError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT if exc.issues else EXIT_FAILURE
    except PBError as exc:
        _err(str(exc))
        return EXIT_FAILURE
    print(f"{len(checked)} file(s): {counts['created']} created, {counts['updated']} updated, "
          f"{counts['unchanged']} unchanged, 0 refused" + (f"; {len(skipped)} skipped" if skipped else ""))
    return EXIT_OK


def _same_names(files: list[Path]) -> list[str]:
    """Documents of the same name: the second would update (overwrite) the first's document."""
    problems: list[str] = []
    by_name: dict[str, Path] = {}
    for path in files:
        if path.suffix.lower() == ".json":
            continue
        first = by_name.setdefault(name_key(path.name), path)
        if first is not path:
            problems.append(f"{path}: {msg('doc.duplicate', filename=path.name)} ({first})")
    return problems


def _check_file(svc: Services, tenant_slug: str, path: Path, step: str) -> CheckedFile | None:
    """One file checked, with its progress line: a JSON knowledge base against the KB's rules, a document in the
    parse sandbox. None (and why, on stderr) for a file that cannot be imported."""
    if path.suffix.lower() == ".json":
        data, problem = _read_json(path)
        if problem:
            _err(f"{step}: {problem.removeprefix(f'{path}: ')}")
            return None
        plan, issues = svc.kb.validate_import(tenant_slug, data)
        if plan is None:
            _err(f"{step}: {len(issues)} problem(s)")
            for issue in issues[:50]:
                print(f"  {issue}", file=sys.stderr)
            if len(issues) > 50:
                print(f"  ... and {len(issues) - 50} more", file=sys.stderr)
            return None
        print(f"{step}: checked ({len(plan.topics)} topics, {len(plan.relations)} relations)",
              file=sys.stderr, flush=True)
        return CheckedFile(path, data=data)
    print(f"{step}: reading…", end="", file=sys.stderr, flush=True)
    try:
        started = time.monotonic()
        raw = path.read_bytes()
        parsed = svc.importer.check(path.name, raw)
    except OSError as exc:
        print(f"\r{step}: cannot be read ({exc.strerror or exc})", file=sys.stderr, flush=True)
        return None
    except DocumentRefused as exc:
        print(f"\r{step}: refused: {exc.user_message.removeprefix(f'{path.name}: ')}", file=sys.stderr, flush=True)
        return None
    pages = f", {parsed.pages} page(s)" if parsed.pages else ""
    print(f"\r{step}: read ({len(raw) / 1024 / 1024:.1f} MB{pages}, {time.monotonic() - started:.1f} s)",
          file=sys.stderr, flush=True)
    return CheckedFile(path, raw=raw, parsed=parsed)


def _write_file(svc: Services, tenant: Tenant, checked: CheckedFile, topic_type: str | None) -> str:
    """Write one checked file; its line says what happened. Returns created, updated or unchanged."""
    path = checked.path
    if checked.parsed is None:
        result = svc.kb.import_document(tenant.slug, checked.data, progress=_progress(f"writing {path.name}"))
        print(f"{path}: {result.summary()}")
        status = "created" if result.created else "updated" if result.updated else "unchanged"
        return "updated" if result.relations_created and status == "unchanged" else status
    outcome = svc.importer.import_parsed(tenant, path.name, checked.raw, checked.parsed, topic_type)
    pages = f", {outcome.pages} page(s)" if outcome.pages else ""
    print(f"{path}: {outcome.status} — {len(outcome.topics)} topic(s){pages}; {outcome.created} created, "
          f"{outcome.updated} updated, {outcome.deleted} removed ({outcome.writes} writes)")
    return outcome.status


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
        return EXIT_BAD_INPUT
    except PBError as exc:
        _err(str(exc))
        return EXIT_FAILURE
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if args.file and args.file != "-":
        Path(args.file).write_text(text, encoding="utf-8")
        print(f"exported {len(doc['topics'])} topics and {len(doc['relations'])} relations to {args.file}",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    """Lines of a JSONL file, each an object with the required keys; exits with EXIT_BAD_INPUT naming the bad line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError) as exc:
        raise SystemExit(_fail(f"{path}: {exc}")) from None
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(_fail(f"{path}:{n}: not valid JSON ({exc.msg})")) from None
        missing = [k for k in required if not isinstance(obj, dict) or k not in obj]
        if missing:
            raise SystemExit(_fail(f"{path}:{n}: missing {', '.join(missing)}"))
        out.append(obj)
    return out


@contextlib.contextmanager
def tenant_services(cfg: Settings, tenant_slug: str) -> Iterator[tuple[Services, Tenant]]:
    """Services on a superuser connection plus the named tenant; an unknown tenant exits with EXIT_BAD_INPUT."""
    with connected(cfg) as services:
        try:
            tenant = services.retriever.tenant(tenant_slug)
        except UnknownTenant as exc:
            raise SystemExit(_fail(str(exc))) from exc
        yield services, tenant


HISTORY_HELP = ("the conversation before QUERY, as a chat turn sees it: the chat API's messages as JSON "
                '([{"role": "user", "content": "..."}, ...]) or one earlier question a line')


def _history(path: str | None) -> list[str]:
    """The earlier questions of `--history FILE`: the chat API's messages as JSON ([{"role", "content"}, ...], the
    user's taken) or a JSON list of questions, or a text file with one earlier question a line. Exits with
    EXIT_BAD_INPUT naming what is wrong."""
    if not path:
        return []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(_fail(f"--history {path}: {exc}")) from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SystemExit(_fail(f"--history {path}: not valid JSON ({exc})")) from None
        out = []
        for n, item in enumerate(items):
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and item.get("role") in ("user", "assistant") \
                    and isinstance(item.get("content"), str):
                if item["role"] == "user":
                    out.append(item["content"])
            else:
                raise SystemExit(_fail(f"--history {path}: item {n} is neither a question nor a message "
                                       '{"role": "user"|"assistant", "content": "..."}'))
        return [clean_text(q) for q in out if q.strip()]
    return [clean_text(line) for line in text.splitlines() if line.strip()]


def _print_understood(understood: Understood) -> None:
    if understood.context:
        how = "in its conversation" if understood.leans else "on its own" if not understood.fuses \
            else "mostly on its own"
        print(f"understood {how} (leaning {understood.leaning:.2f}): {understood.text}")
        if understood.fuses:
            print(f"searched alone and as: {understood.in_context}")


def _print_grounded(grounded: bool) -> None:
    """Whether a turn would rest on what was found (the chat's `grounded`): without a model it answers from it or
    says the knowledge base has nothing on it; a model is told which."""
    print("grounded: yes" if grounded else
          "grounded: no (nothing relevant in the knowledge base: a turn says so, offline or to the model)")


def cmd_search(args: argparse.Namespace) -> int:
    cfg = load_settings()
    if args.batch is None and not (args.query or "").strip():
        return _fail("the query is empty (give QUERY or --batch FILE)")
    if args.batch and args.history:
        return _fail("--history goes with one QUERY, not with --batch")
    queries = _read_jsonl(Path(args.batch), ("qid", "query")) if args.batch else None
    history = _history(args.history)
    with tenant_services(cfg, args.tenant) as (services, tenant):
        if queries is not None:
            for q in queries:
                res = services.retriever.kb_search(tenant, str(q["query"]), args.mode, args.top_k)
                print(json.dumps({"qid": q["qid"], "mode_used": res.mode_used,
                                  "results": [{"id": h.slug, "score": round(h.score, 6)} for h in res.hits]},
                                 ensure_ascii=False), flush=True)
            return EXIT_OK
        understood = services.retriever.understand(tenant, [*history, args.query])
        res = services.retriever.search_in_conversation(tenant, understood, args.mode, args.top_k)
    if args.json:
        print(json.dumps({"query": args.query, "understood": understood.text, "leaning": round(understood.leaning, 2),
                          "grounded": res.relevance.grounded, "mode": res.mode, "mode_used": res.mode_used,
                          "kb_hash": res.kb_hash,
                          "results": [{"id": h.slug, "label": h.label, "type": h.type, "score": round(h.score, 6)}
                                      for h in res.hits]}, ensure_ascii=False, indent=2))
        return EXIT_OK
    note = "" if res.mode_used == res.mode else f" (fell back from {res.mode})"
    _print_understood(understood)
    _print_grounded(res.relevance.grounded)
    print(f"{len(res.hits)} result(s), mode {res.mode_used}{note}, kb {res.kb_hash}")
    for n, h in enumerate(res.hits, start=1):
        print(f"{n:>3}. {h.score:8.4f}  {h.slug:<34} {h.label} ({h.type})")
    if not res.hits:
        print("   no topic matches; try other words")
    return EXIT_OK


def cmd_context(args: argparse.Namespace) -> int:
    cfg = load_settings()
    if not args.query.strip():
        return _fail("the query is empty")
    history = _history(args.history)
    with tenant_services(cfg, args.tenant) as (services, tenant):
        grounding = services.retriever.ground(tenant, [*history, args.query], args.mode, args.top_k)
        context, res = grounding.context, grounding.result
        snippets = res.snippets(services.retriever.index(tenant))
    _print_understood(grounding.understood)
    _print_grounded(res.relevance.grounded)
    print(context.text)
    print(f"\nRAG SNIPPETS (mode {res.mode_used})")
    print(render_snippets(snippets) if snippets else "(none)")
    return EXIT_OK


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    cfg = load_settings()
    queries = _read_jsonl(Path(args.queries), ("qid", "query", "rel"))
    if not queries:
        return _fail(f"{args.queries}: no queries")
    with tenant_services(cfg, args.tenant) as (services, tenant):
        rows: dict[str, dict[str, Any]] = {}
        kinds = sorted({q.get("kind", "") for q in queries} - {""})
        for mode in args.modes:
            ndcg: list[float] = []
            recall: list[float] = []
            mrr: list[float] = []
            used: set[str] = set()
            fell_back = 0
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
        return EXIT_OK
    k = args.k
    print(f"{len(queries)} queries, tenant {args.tenant}")
    kind_cols = "".join(f" nDCG@{k} {kind} |" for kind in kinds)
    print(f"| mode | nDCG@{k} | Recall@{k} | MRR@{k} | fell back |{kind_cols}")
    print("|---" * (5 + len(kinds)) + "|")
    for mode, r in rows.items():
        ran_as = "" if r["mode_used"] == mode else f" (ran as {r['mode_used']})"
        per_kind = "".join(f" {r['ndcg_by_kind'][kind]:.3f} |" for kind in kinds)
        print(f"| {mode}{ran_as} | {r['ndcg']:.3f} | {r['recall']:.3f} | {r['mrr']:.3f} | {r['fallbacks']} |{per_kind}")
    return EXIT_OK


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
            return EXIT_FAILURE
        costs = svc.cost_persister if "cost" in roles else None
        if indexer is not None:
            indexer.rows_per_run = args.batch_size
        tenant_id = None
        if args.tenant:
            if args.role != "index" or not args.once:
                _err("--tenant applies to --once --role index only")
                return EXIT_BAD_INPUT
            try:
                tenant_id = svc.kb.require_tenant(args.tenant).id
            except KBError as exc:
                _err(str(exc))
                return EXIT_BAD_INPUT
        if args.once:
            summary: dict = {"role": args.role}
            failed = 0
            if indexer is not None:
                summary["worker"] = indexer.worker
                stats = indexer.drain(tenant_id, wait_for_leases=True)
                summary.update(rows=stats.rows, topics_indexed=stats.topics_indexed,
                               topics_deleted=stats.topics_deleted, passages=stats.passages,
                               index_failed_rows=stats.failed_rows)
                failed += stats.failed_rows
            if costs is not None:
                spent = costs.drain(wait_for_leases=True)
                summary.update(cost_events=spent.events, cost_duplicates=spent.duplicates,
                               cost_failed_rows=spent.failed_rows,
                               questions_pruned=svc.questions.prune(cfg.question_log_days))
                failed += spent.failed_rows
            if args.json:
                print(json.dumps(summary))
            else:
                parts = []
                if indexer is not None:
                    parts.append(f"indexed {summary['topics_indexed']} topics ({summary['passages']} new passages), "
                                 f"deleted {summary['topics_deleted']}, {summary['index_failed_rows']} row(s) failed")
                if costs is not None:
                    parts.append(f"persisted {summary['cost_events']} cost event(s) ({summary['cost_duplicates']} "
                                 f"already there), {summary['cost_failed_rows']} row(s) failed; deleted "
                                 f"{summary['questions_pruned']} question(s) older than {cfg.question_log_days} days")
                print("; ".join(parts))
            return EXIT_FAILURE if failed else EXIT_OK
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
                jobs.append(svc.questions.prune_forever(cfg.question_log_days, stop=stop))
            await asyncio.gather(*jobs)

        asyncio.run(run())
        print(f"r42 worker ({args.role}): stopped", flush=True)
    return EXIT_OK


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
                return _fail("the running app holds the embedded index: stop it first (Ctrl-C), then rebuild",
                             EXIT_FAILURE)
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
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """`kb import|export`, `search`, `context`, `eval retrieval` and `worker`."""
    kb = sub.add_parser("kb", help="import or export a tenant's knowledge base")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    imp = kb_sub.add_parser(
        "import", help="check files, then upsert their topics: JSON and documents (PDF, Word, PowerPoint, "
        "Markdown, HTML, text); nothing is written when one is bad")
    imp.add_argument("--tenant", required=True, help="tenant slug (made by `r42 tenant create`)")
    imp.add_argument("--name", help="for an unknown tenant: the name the hint's `r42 tenant create` suggests")
    imp.add_argument("paths", nargs="+", metavar="PATH",
                     help='JSON files {"topics": [...], "relations": [...]}, documents (.pdf .docx .pptx .md .html '
                     '.htm .txt) and folders of them (recursively)')
    imp.add_argument("--type", choices=TOPIC_TYPES, default=None,
                     help="type of the topics a document becomes (default: concept, or what a re-imported "
                     "document has)")
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
    search.add_argument("--history", metavar="FILE", help=HISTORY_HELP)
    search.add_argument("query", nargs="?", default="")
    search.set_defaults(func=cmd_search)

    context = retrieval_args(sub.add_parser("context",
                                            help="print the KB context block and RAG snippets for a message"))
    context.add_argument("--history", metavar="FILE", help=HISTORY_HELP)
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


def register_rag_backfill(chatbot_sub: argparse._SubParsersAction) -> None:
    """`chatbot rag-backfill`, among the `chatbot` commands (chatbot.py adds it)."""
    backfill = chatbot_sub.add_parser("rag-backfill", help="queue every topic for (re)indexing")
    backfill.add_argument("--tenant", required=True, help="tenant slug, or * for all tenants")
    backfill.add_argument("--now", action="store_true", help="index right away instead of leaving it to the worker")
    backfill.add_argument("--rebuild", action="store_true",
                          help="drop the tenant's stored vectors first (a damaged or bloated index: `r42 doctor` says)")
    backfill.set_defaults(func=cmd_rag_backfill)
