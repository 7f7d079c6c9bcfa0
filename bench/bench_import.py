"""`r42 kb import` throughput: batched upserts versus one request per record (the naive baseline)."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import pocketbase
from r42_app.services.runtime.pb_server import HOOKS_DIR, HOOKS_POOL
from r42_app.services.store.kb_store import BATCH_SIZE, KBStore, _topic_body
from r42_app.services.store.pb import BULK_BATCH, PocketBase

RUNS = 3


def document(n: int, prefix: str) -> dict:
    topics = [
        {"id": f"{prefix}-{i}", "label": f"{prefix} onderwerp {i}", "type": ("concept", "role", "process")[i % 3],
         "description": "Een synthetisch onderwerp voor de benchmark.", "content": "Leerinhoud. " * 60}
        for i in range(n)
    ]
    relations = [{"source": f"{prefix}-{i}", "target": f"{prefix}-{i + 1}", "type": "related_to"}
                 for i in range(0, n - 1, 2)]
    return {"topics": topics, "relations": relations}


def naive_import(pb: PocketBase, store: KBStore, tenant_slug: str, doc: dict) -> None:
    """Baseline: validate the same way, then one create request per topic and relation."""
    plan, issues = store.validate_import(tenant_slug, doc)
    assert plan is not None, issues
    tenant, _ = store.ensure_tenant(tenant_slug)
    for topic in plan.topics:
        pb.create("topics", {"tenant": tenant.id, **_topic_body(topic)})
    for rel in plan.relations:
        pb.create("relations", {"tenant": tenant.id, "source": rel.source, "target": rel.target, "type": rel.type})


def run() -> str:
    with pocketbase() as (pb, _data):
        store = KBStore(pb)
        rows = []
        for n in (1000, 5000):
            batched, naive = [], []
            for run_no in range(RUNS):
                doc = document(n, f"b{n}r{run_no}")
                start = time.perf_counter()
                store.import_document(f"batch-{n}-{run_no}", doc)
                batched.append(time.perf_counter() - start)
                if n == 1000:
                    start = time.perf_counter()
                    naive_import(pb, store, f"naive-{n}-{run_no}", document(n, f"n{n}r{run_no}"))
                    naive.append(time.perf_counter() - start)
            b = statistics.median(batched)
            if naive:
                nv = statistics.median(naive)
                rows.append(f"| {n} topics + {n // 2} relations | {b:.2f} s | {nv:.2f} s | {nv / b:.1f}x |")
            else:
                rows.append(f"| {n} topics + {n // 2} relations | {b:.2f} s | – | – |")
    return "\n".join([
        f"### Import (median of {RUNS} runs, new tenant each run)",
        "",
        "| workload | batched import | one request per record | speed-up |",
        "|---|---|---|---|",
        *rows,
        "",
        batch_depth(),
        "",
        hooks_cost(),
    ])


# What PocketBase's JS hooks cost a batched import: the same 1,000 topics (no relations) into a fresh PocketBase
# whose hooks dir is a copy of pb_hooks/ with one part taken out. Measurement only: no variant is a configuration
# R42 runs (each leaves out rules that must hold for every writer).
HOOK_VARIANTS = [
    ("pb_hooks/ as it is", lambda hooks: None),
    ("without r42_sessions.pb.js's onRecordCreateRequest (the signed-out token check)",
     lambda hooks: _drop(hooks / "r42_sessions.pb.js", "onRecordCreateRequest((e) => {")),
    ("that handler returning at once for a superuser, before its `require` (every batch is a superuser's)",
     lambda hooks: _superuser_first(hooks / "r42_sessions.pb.js")),
    ("without r42_sessions.pb.js", lambda hooks: (hooks / "r42_sessions.pb.js").unlink()),
    ("without r42.pb.js (the topic, relation and outbox rules)", lambda hooks: (hooks / "r42.pb.js").unlink()),
    ("no hooks at all", lambda hooks: [f.unlink() for f in hooks.glob("*.pb.js")]),
]


def _drop(path: Path, opening: str) -> None:
    """Take the first handler registered as `opening` ... `});` out of a hooks file."""
    text = path.read_text(encoding="utf-8")
    start = text.index(opening)
    path.write_text(text[:start] + text[text.index("\n});", start) + 4:], encoding="utf-8")


def _superuser_first(path: Path) -> None:
    """The create-request handler skips its check (and the module it requires) for a superuser's request."""
    text = path.read_text(encoding="utf-8")
    start = text.index("onRecordCreateRequest((e) => {")
    opening = "onRecordCreateRequest((e) => {"
    path.write_text(text[:start] + opening + "\n  if (e.hasSuperuserAuth()) return e.next();"
                    + text[start + len(opening):], encoding="utf-8")


def median_import(store: KBStore, n: int, prefix: str) -> float:
    """The median seconds of RUNS imports of `n` topics (no relations), each into a new tenant."""
    took = []
    for run_no in range(RUNS):
        doc = {**document(n, f"{prefix}{run_no}"), "relations": []}
        start = time.perf_counter()
        store.import_document(f"{prefix}-{run_no}", doc)
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def hooks_cost(n: int = 1000) -> str:
    rows = []
    for label, change in HOOK_VARIANTS:
        with tempfile.TemporaryDirectory() as tmp:
            hooks = Path(tmp) / "hooks"
            shutil.copytree(HOOKS_DIR, hooks)
            change(hooks)
            with pocketbase(hooks_dir=hooks) as (pb, _data):
                median = median_import(KBStore(pb), n, "hooks")
        rows.append(f"| {label} | {median:.2f} s | {1000 * median / n:.2f} ms |")
    return "\n".join([f"### What the hooks cost a batched import ({n} topics, no relations, median of {RUNS} runs)", "",
                      "| PocketBase's hooks | import | per topic |", "|---|---|---|", *rows])


# A batch's sub-requests run one inside the other in PocketBase, each holding a pooled JS runtime while a JS request
# hook wraps it (services/store/pb.py BULK_BATCH): the same 1,000 topics in batches of two sizes, into PocketBases
# with two pool sizes. The first row is how R42 imported until 2026-12-07, the last how it imports now.
DEPTHS = [(BATCH_SIZE, 15), (BATCH_SIZE, HOOKS_POOL), (BULK_BATCH, 15), (BULK_BATCH, HOOKS_POOL)]


class _SizedStore(KBStore):
    """KBStore whose bulk writes go in batches of `size` sub-requests."""

    def __init__(self, pb: PocketBase, size: int):
        super().__init__(pb)
        self.size = size

    def _run(self, requests, progress=None, size=BULK_BATCH):  # type: ignore[no-untyped-def]
        super()._run(requests, progress, self.size)


def _rss_mb(data: Path) -> int:
    """The resident memory of the PocketBase serving from `data`."""
    pid = subprocess.check_output(["pgrep", "-f", "--", f"--dir={data}"], text=True).split()[0]
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) // 1024


def batch_depth(n: int = 1000) -> str:
    rows = []
    for size, pool in DEPTHS:
        with pocketbase(hooks_pool=pool) as (pb, data):
            started = _rss_mb(data / "pb_data")
            median = median_import(_SizedStore(pb, size), n, "depth")
            rows.append(f"| {size} | {pool} | {median:.2f} s | {1000 * median / n:.2f} ms | {started} MB "
                        f"| {_rss_mb(data / 'pb_data')} MB |")
    title = f"### A batch's size and PocketBase's pool of JS runtimes ({n} topics, no relations, median of {RUNS} runs)"
    head = ("| sub-requests per batch | JS runtimes in the pool | import | per topic | PocketBase's memory at start "
            "| after the imports |")
    return "\n".join([title, "", head, "|---|---|---|---|---|---|", *rows])
