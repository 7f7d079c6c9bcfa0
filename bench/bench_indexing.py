"""Indexing throughput: the outbox indexer (PocketBase -> chunk -> embed -> Chroma) against the
model's raw `encode` on the same chunk texts; and `kb import` + indexing of 5,000 topics."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from bench.common import pocketbase
from r42_app.core.kb import Topic
from r42_app.core.retrieval import chunk_text
from r42_app.services.embeddings import SentenceEmbedder
from r42_app.services.indexer import Indexer
from r42_app.services.kb_store import KBStore
from r42_app.services.seed import SEED_DIR
from r42_app.services.vector_store import VectorStore

COPIES = 4  # the 50 demo topics, four times over: 200 real Dutch topics


def demo_like() -> list[dict]:
    demo = json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8"))["topics"]
    return [{**t, "id": f"{t['id']}-{c}", "label": f"{t['label']} {c}"} for c in range(COPIES) for t in demo]


def run() -> str:
    embedder = SentenceEmbedder()
    embedder.encode(["warm-up"])
    topics = demo_like()
    texts = [c for t in topics for c in chunk_text(Topic(t["id"], t["label"], t["type"], t["description"], t["content"]))]
    start = time.perf_counter()
    embedder.encode(texts)
    raw_rate = len(texts) / (time.perf_counter() - start)

    lines = []
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        vectors = VectorStore(path=Path(chroma_dir))
        indexer = Indexer(pb, kb, vectors, embedder)
        kb.import_document("bench", {"topics": topics, "relations": []})
        stats = indexer.drain()
        index_rate = stats.chunks / stats.seconds
        lines += [
            "### Indexing throughput (200 demo topics, Dutch, 1,000-1,300 characters each)",
            "",
            "| path | chunks/s | topics/s |",
            "|---|---|---|",
            f"| raw `encode` of the same {len(texts)} chunks | {raw_rate:.1f} | {raw_rate * len(topics) / len(texts):.1f} |",
            f"| outbox indexer (read topics, chunk, embed, upsert, mark rows) | {index_rate:.1f} | "
            f"{stats.topics_indexed / stats.seconds:.1f} |",
            f"| indexer / raw | {index_rate / raw_rate:.0%} | |",
            "",
        ]
        demo = json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8"))["topics"]
        big = [{**t, "id": f"{t['id']}-{c}", "label": f"{t['label']} {c}"} for c in range(100) for t in demo]
        start = time.perf_counter()
        kb.import_document("big", {"topics": big, "relations": []})
        written = time.perf_counter() - start
        stats = indexer.drain(kb.require_tenant("big").id)
        total = time.perf_counter() - start
        lines += [
            "### Import and index 5,000 topics (the 50 demo topics, 100 times over: real Dutch, 1,000-1,300 characters)",
            "",
            "| step | time |",
            "|---|---|",
            f"| validate and write (batched) | {written:.1f} s |",
            f"| index {stats.topics_indexed} topics, {stats.chunks} chunks | {total - written:.1f} s |",
            f"| total | {total:.1f} s |",
        ]
    return "\n".join(lines)
