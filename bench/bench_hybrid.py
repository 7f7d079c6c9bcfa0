"""kb_search latency at 10,000 and 100,000 passages through the real Retriever (PocketBase, the lexical index over
passages, the tenant's passage vectors in memory, exact cosine), beside an emulation of the approach before
issue 22 (BM25 candidates, their vectors fetched from one shared Chroma collection, and Chroma's HNSW search with
a `where tenant` filter) in the same run; and, at 100,000 topics, how long an edit takes to become searchable,
the full rebuild it avoids, and the memory a tenant takes.

Latency does not depend on what the stored vectors say, so the passages get random unit vectors of the model's
dimension (embedding 100,000 passages with e5 would take hours on this machine); queries are embedded by the
real model, timed on their own. An edited topic's passages are embedded by the real model (the indexer)."""

from __future__ import annotations

import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.common import Clocked, ms, p50, p95, pocketbase, synthetic_topics
from r42_app.core.kb import Topic, parse_topic
from r42_app.core.retrieval import LEXICAL_CANDIDATES, TenantIndex, embedding_inputs
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import FRESHNESS_S, SEMANTIC_CANDIDATES, Retriever
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import BatchRequest

SIZES = (10_000, 100_000)
QUERIES = 100
EDITS = 10
EDIT_SIZE = 100_000
WRITE_CHUNK = 20_000
FOREIGN = ["pension", "employer", "change", "jobs", "partner", "death", "transfer", "value", "retire", "early",
           "salary", "premium"]


class MemoQueries:
    """The real model, with query vectors computed once beforehand: the search rows then time the search and
    not the query embedding (shown on its own row)."""

    def __init__(self, model):
        self.model = model
        self.model_id = model.model_id
        self.multilingual = model.multilingual
        self.memo: dict[str, np.ndarray] = {}

    def encode(self, texts):
        return self.model.encode(texts)

    def encode_queries(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.model.encode_queries(missing)))
        return np.stack([self.memo[t] for t in texts])


class Calls(list):
    """Wall times of calls (as `timings` gives), with their CPU times (all threads of the process) in `cpu`: on a
    loaded machine CPU time says what a call costs, wall time what it took."""

    cpu: list[float]


def clocked(calls) -> Calls:
    wall = Calls()
    wall.cpu = []
    for fn in calls:
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        wall.cpu.append(time.process_time() - c)
    return wall


def cpu_of(wall: Calls) -> list[float]:
    return wall.cpu


def topic_of(raw: dict) -> Topic:
    topic, issues = parse_topic(raw)  # exactly as KBStore stores it
    assert topic is not None, issues
    return topic


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def mark_outbox_done(pb) -> int:
    """The import queued an outbox row per topic; the vectors are written directly here, so mark them done
    (the edits below then each queue the only pending row)."""
    ids = [r["id"] for r in pb.all("outbox", filter='status = "pending"', fields="id")]
    for start in range(0, len(ids), 400):
        pb.batch([BatchRequest.update("outbox", i, {"status": "done"}) for i in ids[start:start + 400]])
    return len(ids)


@contextlib.contextmanager
def big_kb(n: int, dim: int, model_id: str):
    """PocketBase with n synthetic topics (one passage each) in tenant `bench`; the tenant's Chroma collection
    holding a random unit vector per passage under the keys the Retriever expects; and a shared collection as
    before issue 22 (default HNSW parameters, documents stored, `tenant` in the metadata) with the same vectors."""
    raw = synthetic_topics(n, seed=3)
    with pocketbase() as (pb, _data), tempfile.TemporaryDirectory() as tmp:
        kb = KBStore(pb)
        setup: dict[str, float] = {}
        start = time.perf_counter()
        kb.import_document("bench", {"topics": raw, "relations": []})
        setup["import"] = time.perf_counter() - start
        tenant = kb.require_tenant("bench")
        inputs = [(key, t["id"], text) for t in raw for key, text in embedding_inputs(topic_of(t))]
        emb = unit_vectors(np.random.default_rng(0), len(inputs), dim)

        vectors = VectorStore(path=Path(tmp) / "store", model_id=model_id)
        start = time.perf_counter()
        for s in range(0, len(inputs), WRITE_CHUNK):
            vectors.write(tenant.id, [(key, slug, v) for (key, slug, _), v in
                                      zip(inputs[s:s + WRITE_CHUNK], emb[s:s + WRITE_CHUNK])])
        setup["write"] = time.perf_counter() - start

        import chromadb

        client = chromadb.PersistentClient(path=str(Path(tmp) / "shared"),
                                           settings=chromadb.Settings(anonymized_telemetry=False))
        shared = client.get_or_create_collection("rag-kb-articles", embedding_function=None,
                                                 metadata={"hnsw:space": "cosine"})
        start = time.perf_counter()
        for s in range(0, len(inputs), 4000):
            part = inputs[s:s + 4000]
            shared.add(ids=[f"{tenant.id}:{slug}:0" for _, slug, _ in part], embeddings=emb[s:s + 4000],
                       documents=[text for _, _, text in part],
                       metadatas=[{"tenant": tenant.id, "topic": slug, "chunk": 0} for _, slug, _ in part])
        setup["shared"] = time.perf_counter() - start
        setup["passages"] = len(inputs)
        setup["outbox"] = mark_outbox_done(pb) if n == EDIT_SIZE else 0
        yield pb, kb, tenant, vectors, shared, raw, setup


def old_hybrid(index: TenantIndex, shared, tenant_id: str, query: str, vector: np.ndarray) -> None:
    """Emulation of hybrid before issue 22: BM25 candidates, their vectors fetched from the shared collection by
    id, and Chroma's nearest neighbours of the tenant (`where tenant`, HNSW). The old code ran the last only when
    the embeddings led (semantic weight >= 0.5); here always, so this is its slower path."""
    hits = index.lexical_candidates(query, LEXICAL_CANDIDATES)
    ids = [f"{tenant_id}:{index.topics[h.doc].slug}:0" for h in hits]
    if ids:
        got = shared.get(ids=ids, include=["embeddings", "metadatas", "documents"])
        np.asarray(got["embeddings"], dtype=np.float32) @ vector
    shared.query(query_embeddings=[vector.tolist()], n_results=SEMANTIC_CANDIDATES, where={"tenant": tenant_id},
                 include=["metadatas", "documents", "distances"])


def memory_of(fn) -> tuple[object, int, int]:
    """(result, bytes still allocated after, peak bytes) of fn() under tracemalloc."""
    tracemalloc.start()
    try:
        out = fn()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, current, peak


def edit_word(i: int) -> str:
    return "bewerkmerk" + "".join(chr(97 + int(d)) for d in f"{i:03d}")


def measure(n: int, model, embedder: MemoQueries, queries: list[str], foreign: list[str]) -> dict:
    out: dict = {}
    with big_kb(n, model.dimension, model.model_id) as (pb, kb, tenant, vectors, shared, raw, setup):
        out["setup"] = setup
        kb_clock, vec_clock = Clocked(kb), Clocked(vectors)
        retriever = Retriever(kb_clock, vec_clock, embedder)
        start = time.perf_counter()
        first = retriever.kb_search(tenant, queries[0], "hybrid")
        out["cold"] = time.perf_counter() - start
        held = retriever._vectors[tenant.id]
        assert first.mode_used == "hybrid" and not held.missing, (first.mode_used, len(held.missing))
        for q in queries[:5]:
            retriever.kb_search(tenant, q, "hybrid")
        rows = {}
        for mode in ("hybrid", "semantic", "fts"):
            rows[mode] = clocked(lambda q=q, m=mode: retriever.kb_search(tenant, q, m) for q in queries)
        rows["hybrid, query in words the KB does not use"] = clocked(
            lambda q=q: retriever.kb_search(tenant, q, "hybrid") for q in foreign)
        assert retriever.kb_search(tenant, queries[1], "semantic").mode_used == "semantic"
        index = retriever.index(tenant)
        vecs = {q: embedder.memo[q] for q in queries}
        for q in queries[:5]:  # warm-up of the shared collection (its HNSW index is loaded on first query)
            old_hybrid(index, shared, tenant.id, q, vecs[q])
        rows["old"] = clocked(lambda q=q: old_hybrid(index, shared, tenant.id, q, vecs[q]) for q in queries)
        rows["old-hnsw"] = clocked(lambda q=q: shared.query(
            query_embeddings=[vecs[q].tolist()], n_results=SEMANTIC_CANDIDATES, where={"tenant": tenant.id},
            include=["metadatas", "documents", "distances"]) for q in queries)
        rows["old-bm25"] = clocked(lambda q=q: index.lexical_candidates(q) for q in queries)
        rows["fingerprint"] = clocked(lambda: kb.fingerprint(tenant) for _ in range(50))
        out["rows"] = rows

        # The full rebuild an edit no longer needs, and the memory of a tenant.
        loaded = kb.load(tenant)
        out["rebuild"] = clocked(lambda: TenantIndex.build(loaded.topics, loaded.relations)
                                 for _ in range(2 if n < 50_000 else 1))
        del loaded
        kbt, out["topics_bytes"], _ = memory_of(lambda: kb.load(tenant))
        _, out["index_bytes"], out["index_peak"] = memory_of(lambda: TenantIndex.build(kbt.topics, kbt.relations))
        del kbt
        out["matrix_bytes"] = held.matrix.nbytes
        out["rows_bytes"] = (sys.getsizeof(held.rows) + sum(sys.getsizeof(k) for k in held.rows)
                             + held.passage_rows.nbytes + sys.getsizeof(held._keys)
                             + sum(sys.getsizeof(k) for k in held._keys))
        start = time.perf_counter()
        stored = vectors.vectors(tenant.id)
        out["load_vectors"] = time.perf_counter() - start
        assert len(stored.keys) == setup["passages"]
        del stored

        if n == EDIT_SIZE:
            out["edits"] = edit_to_searchable(pb, kb, tenant, vectors, model, retriever, kb_clock, vec_clock, raw,
                                              embedder)
        out["passages"] = len(index.passages)
    return out


def edit_to_searchable(pb, kb, tenant, vectors, model, retriever, kb_clock, vec_clock, raw, embedder) -> dict:
    """Update one topic at a time with a word nothing else has; time the indexer's run (a) and the first search
    after it that finds the topic by that word, in hybrid mode with its vector (b)."""
    model_clock, store_clock = Clocked(model), Clocked(vectors)
    indexer = Indexer(pb, kb, store_clock, model_clock)
    pick = random.Random(7).sample(range(len(raw)), EDITS)
    words = [edit_word(i) for i in range(EDITS)]
    embedder.encode_queries(words)  # query vectors beforehand: (b) times the search, not the query embedding
    out = defaultdict(list)
    for i, j in enumerate(pick):
        body = {**raw[j], "content": f"{raw[j]['content']} {words[i]}"}
        topic = kb.update_topic(tenant, raw[j]["id"], body)
        for clock in (model_clock, store_clock, kb_clock, vec_clock):
            clock.spent.clear()
        start, cpu = time.perf_counter(), time.process_time()
        stats = indexer.run_once(tenant_id=tenant.id)
        out["a"].append(time.perf_counter() - start)
        out["a_cpu"].append(time.process_time() - cpu)
        assert stats.rows == 1 and stats.passages >= 1 and not stats.failed_rows, stats
        out["a_embed"].append(model_clock.spent["encode"])
        out["a_keys"].append(store_clock.spent["keys"])
        out["a_write"].append(store_clock.spent["write"])
        retriever._checked_at.clear()  # as if FRESHNESS_S had passed since the last check
        start, cpu = time.perf_counter(), time.process_time()
        result = retriever.kb_search(tenant, words[i], "hybrid")
        out["b"].append(time.perf_counter() - start)
        out["b_cpu"].append(time.process_time() - cpu)
        held = retriever._vectors[tenant.id]
        keys = [key for key, _ in embedding_inputs(topic)]
        assert result.mode_used == "hybrid" and result.hits and result.hits[0].slug == topic.slug, result
        assert all(k in held.rows for k in keys) and not held.missing, "the edited passage has no vector"
        out["b_pb"].append(sum(kb_clock.spent.values()))
        out["b_chroma"].append(vec_clock.spent["vectors"])
        out["passages"].append(stats.passages)
    out["index_after"] = retriever.index(tenant)
    return out


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def run() -> str:
    started = time.perf_counter()
    load_before = load_average()
    model = make_embedder("")
    model.encode_queries(["warm-up"])
    embedder = MemoQueries(model)
    pyrng = random.Random(1)
    raw10 = synthetic_topics(SIZES[0], seed=3)
    queries = [" ".join(pyrng.choice(raw10)["description"].split()[:6]) for _ in range(QUERIES)]
    foreign = [" ".join(pyrng.sample(FOREIGN, 5)) for _ in range(QUERIES)]
    encode = clocked(lambda q=q: model.encode_queries([q]) for q in queries)
    embedder.encode_queries(queries + foreign)
    results = {n: measure(n, model, embedder, queries, foreign) for n in SIZES}
    load_after = load_average()

    labels = {
        "hybrid": "hybrid (BM25 over passages + exact cosine over the tenant's vectors in memory, fused)",
        "semantic": "semantic (exact cosine over every passage)",
        "fts": "fts (BM25 over passages)",
        "hybrid, query in words the KB does not use": "hybrid, query in words the KB does not use",
        "old": "**before issue 22 (emulated)**: BM25 candidates + their vectors by id + HNSW `where tenant` top 20, "
               "one shared collection",
        "old-hnsw": "… of which Chroma's HNSW query with `where tenant` alone",
        "old-bm25": "… of which the BM25 candidates (top 50) alone",
        "fingerprint": f"(KB change check: 2 PocketBase queries, at most every {FRESHNESS_S} s)",
    }
    head = " | ".join(f"{n:,} p50 | {n:,} p95 | {n:,} CPU p50" for n in SIZES)
    table = [f"| search (query embedding excluded) | {head} |", "|---|" + "---|" * (3 * len(SIZES))]
    for key, label in labels.items():
        cells = " | ".join(f"{ms(p50(v))} | {ms(p95(v))} | {ms(p50(cpu_of(v)))}"
                           for v in (results[n]["rows"][key] for n in SIZES))
        table.append(f"| {label} | {cells} |")
    table.append(f"| (query embedding alone: e5 `encode_queries`, one query) | {ms(p50(encode))} | {ms(p95(encode))} | "
                 f"{ms(p50(cpu_of(encode)))} |" + " | | |" * (len(SIZES) - 1))

    setup_rows = []
    for n in SIZES:
        r = results[n]
        s = r["setup"]
        setup_rows.append(
            f"| {n:,} | {s['passages']:,} | {s['import']:.0f} s | {s['write']:.0f} s | {s['shared']:.0f} s | "
            f"{r['cold'] * 1000:.0f} ms | {r['load_vectors'] * 1000:.0f} ms | {statistics.median(r['rebuild']):.2f} s "
            f"(CPU {statistics.median(cpu_of(r['rebuild'])):.2f} s) | "
            f"{r['topics_bytes'] / 1e6:.0f} MB | {r['index_bytes'] / 1e6:.0f} MB "
            f"(peak {r['index_peak'] / 1e6:.0f} MB) | "
            f"{r['matrix_bytes'] / 1e6:.0f} MB + ~{r['rows_bytes'] / 1e6:.0f} MB keys |")

    e = results[EDIT_SIZE]["edits"]
    total = [a + b for a, b in zip(e["a"], e["b"])]
    total_cpu = [a + b for a, b in zip(e["a_cpu"], e["b_cpu"])]
    a_rest = [a - x - y - z for a, x, y, z in zip(e["a"], e["a_embed"], e["a_keys"], e["a_write"])]
    b_rest = [b - x - y for b, x, y in zip(e["b"], e["b_pb"], e["b_chroma"])]
    after = e["index_after"]
    def row(label: str, values: list[float], cpu: list[float] | None = None, bold: bool = False) -> str:
        median = f"**{ms(p50(values))}**" if bold else ms(p50(values))
        return f"| {label} | {median} | {ms(max(values))} | {ms(p50(cpu)) if cpu else ''} |"

    rebuild = results[EDIT_SIZE]["rebuild"]
    edit_rows = [
        row("(a) indexer picks the row up and stores the vectors (`Indexer.run_once`)", e["a"], e["a_cpu"]),
        row("… of which embedding the topic's passage(s) with e5", e["a_embed"]),
        row("… of which Chroma: the topic's stored keys (`VectorStore.keys`, `where topic $in`)", e["a_keys"]),
        row("… of which Chroma: the write (`VectorStore.write`: add, count, metadata)", e["a_write"]),
        row("… of which PocketBase (claim, read the topic, mark the row done) and the rest", a_rest),
        row("(b) the first hybrid search after it finds the topic by its new word, with its vector", e["b"],
            e["b_cpu"]),
        row("… of which PocketBase (change check, topics updated since)", e["b_pb"]),
        row("… of which Chroma (the new passage's vector)", e["b_chroma"]),
        row("… of which the incremental index update and the search itself", b_rest),
        row("**(a) + (b)**", total, total_cpu, bold=True),
        row("(for comparison: full rebuild of the lexical index, `TenantIndex.build`)", rebuild, cpu_of(rebuild)),
    ]
    s100 = results[EDIT_SIZE]["setup"]
    return "\n".join([
        f"### kb_search latency at {' and '.join(f'{n:,}' for n in SIZES)} passages ({QUERIES} queries each, top 5)",
        "",
        "Synthetic topics (`synthetic_topics`, one passage each) in PocketBase; each passage a random unit vector of "
        f"e5's {model.dimension} dimensions in the tenant's Chroma collection, under the keys the Retriever expects "
        "(latency does not depend on what the vectors say; embedding 100,000 passages with e5 would take hours here). "
        "Through the real `Retriever`: KB change check, lexical index, the tenant's vectors in memory, snippets. "
        "Query vectors are computed by the real e5 model beforehand, so the search rows exclude the query embedding, "
        "which has its own row (add it for the time a user waits). The `before issue 22` row is an emulation, not the "
        "old code: the Chroma calls the old hybrid path made (the candidates' vectors by id, and the tenant's 20 "
        "nearest with `where={'tenant': …}` on one shared collection with default HNSW parameters, holding the same "
        "vectors and their text) plus the BM25 candidates. The old code asked for the nearest only when the embeddings "
        "led (an English KB, or words the KB does not use), so the row is its slower path; and the shared collection "
        "here holds one tenant only (with more tenants the filter has more to skip).",
        "",
        *table,
        "",
        "| passages | in total | import to PocketBase | write random vectors (`VectorStore.write`) | "
        "same, shared collection (old) | first query, cold (load KB, build index, load vectors) | "
        "load all vectors from Chroma | full index rebuild | topics in memory | `TenantIndex` (tracemalloc) | "
        "vectors in memory |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *setup_rows,
        "",
        f"### Edit to searchable at {EDIT_SIZE:,} topics (median and worst of {EDITS} edits)",
        "",
        f"The {EDIT_SIZE:,}-topic tenant is warm in a Retriever (index built, vectors loaded). Each edit appends a "
        "word no other topic has to one topic's content through `KBStore.update_topic` (which queues an outbox row); "
        "(a) is `Indexer.run_once` embedding the changed passage with the real e5 model and writing it to Chroma; "
        "(b) is the first `kb_search(…, 'hybrid')` for that word once the Retriever asks PocketBase again "
        "(`_checked_at` cleared, as if the poll interval had passed), which must return the topic first with "
        "`mode_used` hybrid and its new vector loaded. Query embedding excluded from (b) (see the row above). "
        f"The {s100['outbox']:,} outbox rows of the import were marked done beforehand (their vectors were written "
        "directly).",
        "",
        "| step | median | worst | CPU median |",
        "|---|---|---|---|",
        *edit_rows,
        "",
        f"Plus the poll interval: the Retriever asks PocketBase whether the KB changed at most every "
        f"**FRESHNESS_S = {FRESHNESS_S} s**, so a search sees an edit up to {FRESHNESS_S} s after (a) + (b) at worst; "
        f"the indexer itself polls the outbox every second when idle. After the {EDITS} edits the index holds "
        f"{len(after.passages) - after.base_passages} passages in its delta segment (no rebuild).",
        "",
        f"Load average before / after: {load_before} | {load_after}; {(time.perf_counter() - started) / 60:.1f} min in "
        "all. The machine has 2 cores and other jobs (tests, benchmarks) ran at the same time: timings may be "
        "perturbed; medians are given where it matters.",
    ])
