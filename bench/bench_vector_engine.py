"""Search past one worker's memory (issue 50, item 3), side by side with today's path in the same run.

(b) One tenant of BIG_PASSAGES (1,000,000) synthetic passage vectors (384 dimensions, like e5-small) in its Chroma
    collection, written as the indexer writes (R42's HNSW settings, batches of 4,000). Today's path: the worker
    loads every vector into memory (the time and memory of that load) and searches exactly (numpy). The engine's
    path (R42_VECTOR_ENGINE_PASSAGES): Chroma's own query on the Chroma server (chromadb's server, as `r42 serve`
    runs it, over the same folder), ENGINE_NEIGHBOURS passages per question as the retriever asks. Latency p50/p95
    over QUERIES questions, recall@10 against exact search, and the worker's resident memory before and after.
(c) SMALL_TENANTS (2,000) tenants of 500 passages: a first question of a tenant (its vectors read from Chroma, then
    searched exactly, as the retriever does for a tenant nobody asked yet) and a warm one, and the worker's memory
    with R42_VECTOR_CACHE_MB's default budget (1 GB) after every tenant asked once; side by side, the same
    questions through the vector engine (Chroma's query). Through the Chroma server, as several workers use it.

Synthetic vectors are clustered (centres, each vector its centre plus noise, normalised), as embeddings of
real text are; uniform random vectors would be a harder and less realistic case for a graph index. Queries are new
points near the same centres. Sizes: BENCH_ENGINE_PASSAGES and BENCH_ENGINE_TENANTS shrink a trial run.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

from bench.common import p50, p95
from r42_app.services.adapters.vector_store import HNSW, WRITE_BATCH, VectorStore, collection_name
from r42_app.services.retrieval import ENGINE_NEIGHBOURS, VECTOR_CACHE_BYTES, TenantVectors
from r42_app.services.runtime.sidecars import ChromaServer

DIM = 384
BIG_PASSAGES = int(os.environ.get("BENCH_ENGINE_PASSAGES", 1_000_000))
SMALL_TENANTS = int(os.environ.get("BENCH_ENGINE_TENANTS", 2_000))
SMALL_PASSAGES = 500
PER_CLUSTER = 50  # passages per cluster centre on average (a topic's neighbourhood)
NOISE = 0.75  # the noise's length against the centre's 1: a passage's cosine with its centre is ~0.8, as related
# passages' e5 vectors are
QUERIES = 200
MODEL = "bench-synthetic-384"


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    which = rng.integers(0, len(centres), n)
    return unit(centres[which] + NOISE * rng.standard_normal((n, DIM), dtype=np.float32) / np.sqrt(DIM))


def graph_of() -> dict:
    """R42's HNSW settings, or BENCH_HNSW's (`hnsw:M=16,hnsw:construction_ef=100`) over them."""
    return {**HNSW, **{k: int(v) for k, v in (kv.split("=") for kv in os.environ.get("BENCH_HNSW", "").split(",")
                                               if kv)}}


def write_collection(client, tenant: str, vectors: np.ndarray, start_key: int = 0) -> None:
    """As VectorStore.write does: R42's HNSW settings, batches of WRITE_BATCH, the tenant in every row."""
    graph = graph_of()
    col = client.get_or_create_collection(collection_name(tenant, MODEL), embedding_function=None,
                                          metadata={**graph, "r42:model": MODEL, "tenant": tenant})
    for s in range(0, len(vectors), WRITE_BATCH):
        block = vectors[s:s + WRITE_BATCH]
        ids = [f"{tenant}:t{(start_key + s + i) // 4}#p{(start_key + s + i) % 4}" for i in range(len(block))]
        col.add(ids=ids, embeddings=block, metadatas=[{"tenant": tenant, "topic": i.split(":")[1].split("#")[0]}
                                                      for i in ids])


def big_tenant(folder: Path) -> list[str]:
    import chromadb

    rng = np.random.default_rng(50)
    centres = unit(rng.standard_normal((max(1, BIG_PASSAGES // PER_CLUSTER), DIM), dtype=np.float32))
    queries = clustered(rng, centres, QUERIES)
    client = chromadb.PersistentClient(path=str(folder), settings=chromadb.Settings(anonymized_telemetry=False))
    began, written, parts = time.perf_counter(), 0, []
    while written < BIG_PASSAGES:
        block = clustered(rng, centres, min(50_000, BIG_PASSAGES - written))
        write_collection(client, "big", block, written)
        parts.append(block)
        written += len(block)
    write_s = time.perf_counter() - began
    del client
    gc.collect()
    truth_matrix = np.concatenate(parts)
    del parts
    exact_top = [set(np.argsort(-(truth_matrix @ q))[:10]) for q in queries]
    del truth_matrix
    gc.collect()

    server = ChromaServer(folder, token_file=folder.parent / "chroma.token").start(timeout=600)
    try:
        store = VectorStore(url=server.url, token=server.token, model_id=MODEL)
        # the engine's path: nothing of the tenant in this process
        before = rss_mb()
        engine_s, recall = [], []
        store.nearest("big", queries[0], ENGINE_NEIGHBOURS)  # the server opens the collection once
        for q, truth in zip(queries, exact_top, strict=True):
            t = time.perf_counter()
            near = store.nearest("big", q, ENGINE_NEIGHBOURS)
            engine_s.append(time.perf_counter() - t)
            got = [int(k.split("#")[0][1:]) * 4 + int(k.split("#p")[1]) for k, _ in near[:10]]
            recall.append(len(truth & set(got)) / 10)
        engine_rss = rss_mb()
        if os.environ.get("BENCH_ENGINE_MEMORY", "1") == "0":  # the engine alone (today's path measured before)
            return [f"### (b) {BIG_PASSAGES:,} vectors, graph {graph_of()}: the engine alone", "",
                    (f"Written in {write_s:.0f} s. p50 "
                    f"{p50(engine_s) * 1000:.1f} ms, p95 {p95(engine_s) * 1000:.1f} ms, recall@10 "
                    f"{statistics.mean(recall):.3f}, worker {before:.0f} MB → {engine_rss:.0f} MB."), ""]
        # today's path: every vector into this worker, then exact search
        t = time.perf_counter()
        stored = store.vectors("big")
        held = TenantVectors()
        held.add(stored.keys, stored.vectors)
        load_s = time.perf_counter() - t
        del stored
        gc.collect()
        loaded_rss = rss_mb()
        exact_s = []
        for q in queries:
            t = time.perf_counter()
            np.argsort(-(held.matrix @ q))[:10]
            exact_s.append(time.perf_counter() - t)
    finally:
        server.stop()
    size_gb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**30
    return [
        f"### (b) One tenant of {BIG_PASSAGES:,} passage vectors: the vector engine against memory",
        "",
        (f"Written as the indexer writes (R42's HNSW settings, batches of {WRITE_BATCH:,}): {write_s:.0f} s, "
        f"{size_gb:.1f} GB on disk. {QUERIES} questions near the data's {BIG_PASSAGES // PER_CLUSTER:,} clusters."),
        "",
        "| path | first use | per question p50 | p95 | recall@10 against exact | worker memory (RSS) |",
        "|---|---:|---:|---:|---:|---:|",
        (f"| today: every vector in the worker, exact | {load_s:.0f} s to load | {p50(exact_s) * 1000:.0f} ms | "
        f"{p95(exact_s) * 1000:.0f} ms | 1.000 | {before:.0f} MB → {loaded_rss:.0f} MB |"),
        (f"| vector engine: Chroma's query on its server ({ENGINE_NEIGHBOURS} neighbours) | none | "
        f"{p50(engine_s) * 1000:.1f} ms | {p95(engine_s) * 1000:.1f} ms | {statistics.mean(recall):.3f} | "
        f"{before:.0f} MB → {engine_rss:.0f} MB |"),
        "",
    ]


def small_tenants(folder: Path) -> list[str]:
    rng = np.random.default_rng(51)
    centres = unit(rng.standard_normal((max(1, SMALL_PASSAGES // PER_CLUSTER), DIM), dtype=np.float32))
    began = time.perf_counter()
    # Written through a Chroma server, as the indexer writes when `r42 serve` runs one: the server applies each
    # write as it comes (an embedded writer here left 2,000 collections' work to the next server's start and held
    # 8 GB in this process, whose memory is measured below as a worker's).
    folder.mkdir(parents=True, exist_ok=True)
    writer = ChromaServer(folder, token_file=folder.parent / "chroma.token").start(timeout=600)
    try:
        client = VectorStore(url=writer.url, token=writer.token, model_id=MODEL)._open()
        for n in range(SMALL_TENANTS):
            write_collection(client, f"t{n:04d}", clustered(rng, centres, SMALL_PASSAGES))
            if (n + 1) % WRITE_CHUNK == 0 or n + 1 == SMALL_TENANTS:
                print(f"  (c) {n + 1:,} of {SMALL_TENANTS:,} tenants written, {time.perf_counter() - began:.0f} s",
                      file=sys.stderr, flush=True)
    finally:
        writer.stop()
    write_s = time.perf_counter() - began
    queries = clustered(rng, centres, SMALL_TENANTS + 1)
    out = {}
    for path in ("exact", "engine"):  # each on a Chroma server started for it: nothing of the other's in its caches
        server = ChromaServer(folder, token_file=folder.parent / "chroma.token").start(timeout=600)
        try:
            out[path] = _ask_every_tenant(VectorStore(url=server.url, token=server.token, model_id=MODEL), queries,
                                          path, server)
        finally:
            server.stop()
        got = out[path]  # (a long run: each path's figures at once)
        print(f"  (c) {path} path: first {p50(got['first']) * 1000:.1f} ms p50 / {p95(got['first']) * 1000:.1f} ms "
              f"p95, warm {p50(got['warm']) * 1000:.2f} / {p95(got['warm']) * 1000:.2f} ms, worker "
              f"{got['before']:.0f} → {got['after']:.0f} MB, server {got['server']:.0f} MB",
              file=sys.stderr, flush=True)
    return _small_table(write_s, out)


WRITE_CHUNK = 250


def _ask_every_tenant(store: VectorStore, queries: np.ndarray, path: str, server: ChromaServer) -> dict:
    """Every tenant asked once (a first question: nobody asked it yet) and again (warm), on one path: `exact` reads
    the tenant's vectors into this worker (the retriever's budgeted cache, least recently used out first) and
    searches them; `engine` asks Chroma's query. The worker's and the Chroma server's memory after all of them."""
    store.count("t0000")  # the client connected
    before = rss_mb()
    cache: dict[str, TenantVectors] = {}
    first_s, warm_s = [], []
    for n in range(SMALL_TENANTS):
        tenant = f"t{n:04d}"
        t = time.perf_counter()
        if path == "exact":
            stored = store.vectors(tenant)
            held = TenantVectors()
            held.add(stored.keys, stored.vectors)
            np.argsort(-(held.matrix @ queries[n]))[:10]
            cache[tenant] = held
            while sum(v.nbytes for v in cache.values()) > VECTOR_CACHE_BYTES and len(cache) > 1:
                cache.pop(next(iter(cache)))
        else:
            store.nearest(tenant, queries[n], ENGINE_NEIGHBOURS)
        first_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        if path == "exact":
            np.argsort(-(cache[tenant].matrix @ queries[n + 1]))[:10]
        else:
            store.nearest(tenant, queries[n + 1], ENGINE_NEIGHBOURS)
        warm_s.append(time.perf_counter() - t)
        if (n + 1) % 500 == 0:
            print(f"  (c) {path}: {n + 1:,} tenants asked", file=sys.stderr, flush=True)
    server_mb = psutil.Process(server.proc.pid).memory_info().rss / 2**20 if server.proc else float("nan")
    return {"first": first_s, "warm": warm_s, "before": before, "after": rss_mb(), "server": server_mb,
            "held": len(cache), "held_mb": sum(v.nbytes for v in cache.values()) / 2**20}


def _small_table(write_s: float, out: dict) -> list[str]:
    exact, engine = out["exact"], out["engine"]
    return [
        f"### (c) {SMALL_TENANTS:,} tenants of {SMALL_PASSAGES} passages: first and warm questions",
        "",
        (f"Written as the indexer writes: {write_s:.0f} s. Each tenant asked once (nobody had asked it) and then "
         f"again, on each path, each path on a Chroma server started for it; the budget is R42_VECTOR_CACHE_MB's "
         f"default, {VECTOR_CACHE_BYTES >> 20} MB."),
        "",
        "| path | first question p50 | p95 | warm p50 | p95 | worker memory (RSS) | Chroma server (RSS) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        (f"| today's (and R42's below R42_VECTOR_ENGINE_PASSAGES): the tenant's vectors into the worker, exact | "
         f"{p50(exact['first']) * 1000:.1f} ms | {p95(exact['first']) * 1000:.1f} ms | "
         f"{p50(exact['warm']) * 1000:.2f} ms | {p95(exact['warm']) * 1000:.2f} ms | "
         f"{exact['before']:.0f} → {exact['after']:.0f} MB ({exact['held']:,} tenants held, "
         f"{exact['held_mb']:.0f} MB) | {exact['server']:.0f} MB |"),
        (f"| the vector engine: Chroma's query ({ENGINE_NEIGHBOURS} neighbours) | "
         f"{p50(engine['first']) * 1000:.1f} ms | {p95(engine['first']) * 1000:.1f} ms | "
         f"{p50(engine['warm']) * 1000:.2f} ms | {p95(engine['warm']) * 1000:.2f} ms | "
         f"{engine['before']:.0f} → {engine['after']:.0f} MB | {engine['server']:.0f} MB |"),
        "",
    ]


def run() -> str:
    """Both parts; BENCH_ENGINE_PARTS=b or =c runs one (each is best run in a process of its own: the other's
    leftovers stay in the process's memory)."""
    parts = os.environ.get("BENCH_ENGINE_PARTS", "b,c").split(",")
    base = Path(tempfile.mkdtemp(prefix="r42-bench-engine-"))
    try:
        out: list[str] = []
        if "b" in parts:
            (base / "big").mkdir()
            out += big_tenant(base / "big" / "chroma")
            print("\n".join(out), file=sys.stderr, flush=True)  # (a long run: this part's figures at once)
            shutil.rmtree(base / "big", ignore_errors=True)
        if "c" in parts:
            (base / "small").mkdir()
            out += small_tenants(base / "small" / "chroma")
        return "\n".join(out)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    print(run())
