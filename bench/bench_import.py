"""`r42 kb import` throughput: batched upserts versus one request per record (the naive baseline)."""

from __future__ import annotations

import socket
import statistics
import tempfile
import time
from pathlib import Path

from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
from r42_app.services.store.kb_store import KBStore, _topic_body
from r42_app.services.store.pb import PocketBase

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
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        creds = ensure_superuser(data / "pb_data", data / "superuser.json")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = PocketBaseServer(data / "pb_data", port).start()
        try:
            pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
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
        finally:
            server.stop()
    return "\n".join([
        f"### Import (median of {RUNS} runs, new tenant each run)",
        "",
        "| workload | batched import | one request per record | speed-up |",
        "|---|---|---|---|",
        *rows,
    ])
