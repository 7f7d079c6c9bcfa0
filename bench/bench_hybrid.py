"""kb_search latency at 10k topics: hybrid (BM25 candidates + query embedding + Chroma re-rank)
next to fts and the raw query embedding, through the real Retriever, PocketBase and Chroma."""

from __future__ import annotations

import contextlib
import random
import tempfile
from pathlib import Path

import numpy as np

from bench.common import ms, p50, p95, pocketbase, synthetic_topics, timings
from r42_app.services.embeddings import SentenceEmbedder
from r42_app.services.kb_store import KBStore
from r42_app.services.retrieval import Retriever
from r42_app.services.vector_store import VectorStore

N = 10_000
QUERIES = 100


@contextlib.contextmanager
def big_kb(n: int = N):
    """PocketBase with n synthetic topics in tenant `bench`, and embedded Chroma holding random unit
    vectors for them (latency does not depend on what the vectors say; embedding n topics would
    take minutes). Yields (kb, tenant, vectors, raw topics)."""
    raw = synthetic_topics(n, seed=3)
    with pocketbase() as (pb, _data), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        kb.import_document("bench", {"topics": raw, "relations": []})
        tenant = kb.require_tenant("bench")
        vectors = VectorStore(path=Path(chroma_dir))
        rng = np.random.default_rng(0)
        col = vectors._open()
        for start in range(0, n, 1000):
            part = raw[start : start + 1000]
            emb = rng.normal(size=(len(part), 384)).astype(np.float32)
            emb /= np.linalg.norm(emb, axis=1, keepdims=True)
            col.upsert(ids=[f"{tenant.id}:{t['id']}:0" for t in part], embeddings=emb.tolist(),
                       documents=[t["description"] for t in part],
                       metadatas=[{"tenant": tenant.id, "topic": t["id"], "chunk": 0} for t in part])
        yield kb, tenant, vectors, raw


def run() -> str:
    with big_kb() as (kb, tenant, vectors, raw):
        embedder = SentenceEmbedder()
        retriever = Retriever(kb, vectors, embedder)
        pyrng = random.Random(1)
        queries = [" ".join(pyrng.choice(raw)["description"].split()[:6]) for _ in range(QUERIES)]
        for q in queries[:5]:  # warm-up: model load, index build, Chroma caches
            retriever.kb_search(tenant, q, "hybrid")
        # Questions in words the KB does not use (e.g. English on a Dutch KB): hybrid then also asks
        # Chroma for the nearest chunks of the tenant.
        foreign = [" ".join(pyrng.sample(["pension", "employer", "change", "jobs", "partner", "death", "transfer",
                                          "value", "retire", "early", "salary", "premium"], 5)) for _ in range(QUERIES)]
        results = {}
        for mode in ("hybrid", "semantic", "fts"):
            results[mode] = [t for q in queries for t in timings(lambda q=q, m=mode: retriever.kb_search(tenant, q, m), 1)]
        results["hybrid, query in words the KB does not use"] = [
            t for q in foreign for t in timings(lambda q=q: retriever.kb_search(tenant, q, "hybrid"), 1)]
        encode = [t for q in queries for t in timings(lambda q=q: embedder.encode([q]), 1)]
        fingerprint = timings(lambda: kb.fingerprint(tenant), 50)
        assert retriever.kb_search(tenant, queries[0], "hybrid").mode_used == "hybrid"
    rows = [f"| {mode} | {ms(p50(v))} | {ms(p95(v))} |" for mode, v in results.items()]
    rows.append(f"| (query embedding alone) | {ms(p50(encode))} | {ms(p95(encode))} |")
    rows.append(f"| (KB change check: 2 PocketBase queries) | {ms(p50(fingerprint))} | {ms(p95(fingerprint))} |")
    return "\n".join([
        f"### kb_search at {N:,} topics ({QUERIES} queries, top 5, through PocketBase + embedded Chroma)",
        "",
        "| mode | p50 | p95 |",
        "|---|---|---|",
        *rows,
    ])
