"""The vector store's disk and write cost (issue 22): Chroma's HNSW parameters, the order of adds and deletes,
and the 50,000-passage churn with the directory size after each step (tests/integration/test_index_size.py runs
the same churn at a tenth of the size and of the store's batch sizes, and bounds it at 3x).
Vectors are random unit vectors of the model's 384 dimensions: neither the disk nor the graph cares what they
mean."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import chromadb
import numpy as np

from r42_app.services.adapters import vector_store
from r42_app.services.adapters.vector_store import VectorStore

DIM = 384
PARAMS_N = 20_000
CHURN_N = 50_000


def du(path: Path) -> int:
    return int(subprocess.check_output(["du", "-sb", str(path)]).split()[0])


def unit(rng, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def hnsw_params() -> list[str]:
    rng = np.random.default_rng(0)
    vectors = unit(rng, PARAMS_N)
    rows = []
    for label, params in (("Chroma's defaults (M 16, construction ef 100)", {}),
                          ("**shipped: M 8, construction ef 32**", {"hnsw:M": 8, "hnsw:construction_ef": 32}),
                          ("M 4, construction ef 16", {"hnsw:M": 4, "hnsw:construction_ef": 16})):
        with tempfile.TemporaryDirectory() as d:
            col = chromadb.PersistentClient(path=d).create_collection(
                "bench", metadata={"hnsw:space": "cosine", "hnsw:batch_size": 1000, "hnsw:sync_threshold": 10000,
                                   **params})
            wall, cpu = time.perf_counter(), time.process_time()
            for s in range(0, PARAMS_N, 1000):
                col.add(ids=[str(i) for i in range(s, s + 1000)], embeddings=vectors[s:s + 1000])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            probe = col.query(query_embeddings=vectors[:50], n_results=1)["ids"]
            found = sum(ids[0] == str(i) for i, ids in enumerate(probe)) / 50
            rows.append(f"| {label} | {PARAMS_N / wall:,.0f} | {cpu:.1f} s | {du(Path(d)) / 1e6:.1f} MB | {found:.0%} |")
    return [f"### HNSW build parameters ({PARAMS_N:,} vectors added in batches of 1,000)", "",
            "| parameters | vectors/s | CPU | directory | a vector finds itself (HNSW query) |", "|---|---|---|---|---|",
            *rows, ""]


def add_order() -> list[str]:
    rng = np.random.default_rng(1)
    n = PARAMS_N // 2
    rows = []
    for label, delete_first in (("delete the old ones, then add (before)", True), ("**add, then delete (shipped)**", False)):
        with tempfile.TemporaryDirectory() as d:
            col = chromadb.PersistentClient(path=d).create_collection(
                "bench", metadata={**vector_store.HNSW})
            old = [str(i) for i in range(n)]
            first = unit(rng, n)
            for s in range(0, n, 1000):
                col.add(ids=old[s:s + 1000], embeddings=first[s:s + 1000])
            new = [f"n{i}" for i in range(n)]
            second = unit(rng, n)
            started = time.perf_counter()
            if delete_first:
                for s in range(0, n, 1000):
                    col.delete(ids=old[s:s + 1000])
            for s in range(0, n, 1000):
                col.add(ids=new[s:s + 1000], embeddings=second[s:s + 1000])
            if not delete_first:
                for s in range(0, n, 1000):
                    col.delete(ids=old[s:s + 1000])
            rows.append(f"| {label} | {time.perf_counter() - started:.1f} s |")
    return [f"### Re-indexing {n:,} vectors: the order of deletes and adds", "",
            "| order | time |", "|---|---|", *rows, "",
            "HNSW keeps a deleted vector in its graph; adding into a graph that is mostly deleted walks the dead "
            "nodes. The store adds first and compacts once churn passes 1.5× the live vectors.", ""]


def churn() -> list[str]:
    rng = np.random.default_rng(22)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "chroma"
        store = VectorStore(path=path, model_id="bench")
        raw = CHURN_N * DIM * 4

        def step(label: str, started: float, live: int) -> None:
            size = du(path)
            rows.append(f"| {label} | {time.perf_counter() - started:.1f} s | {live:,} | {size / 1e6:.1f} MB | "
                        f"{size / max(1, live * DIM * 4):.2f}× |")

        started = time.perf_counter()
        generation = [(f"t{i // 4}#p-g0-{i}", f"t{i // 4}", v) for i, v in enumerate(unit(rng, CHURN_N))]
        store.write("tenant", generation)
        step(f"index {CHURN_N:,} passages", started, CHURN_N)
        for g in (1, 2):
            started = time.perf_counter()
            fresh = [(f"t{i // 4}#p-g{g}-{i}", f"t{i // 4}", v) for i, v in enumerate(unit(rng, CHURN_N))]
            store.write("tenant", fresh, [key for key, _, _ in generation])
            generation = fresh
            step(f"re-index all of them ({'first' if g == 1 else 'second'} time: new ids, old deleted)", started,
                 CHURN_N)
        started = time.perf_counter()
        store.write("tenant", [], [key for key, _, _ in generation[: CHURN_N // 2]])
        step("delete half", started, CHURN_N // 2)
        started = time.perf_counter()
        stored = store.vectors("tenant")
        read = time.perf_counter() - started
        assert len(stored.keys) == CHURN_N // 2
    return [f"### {CHURN_N:,} passages indexed, re-indexed twice, half deleted (one tenant, embedded Chroma)", "",
            "| step | time | live vectors | directory | × raw vectors |", "|---|---|---|---|---|", *rows, "",
            f"Raw vectors: {raw / 1e6:.1f} MB at {CHURN_N:,}. Reading back the {CHURN_N // 2:,} live vectors: "
            f"{read:.1f} s. The test bounds the directory at 3× (tests/integration/test_index_size.py, at 5,000 "
            "passages with a tenth of these batch sizes).", ""]


def run() -> str:
    return "\n".join(hnsw_params() + add_order() + churn())
