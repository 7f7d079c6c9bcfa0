"""Lexical retrieval at 1k, 10k and 100k synthetic topics: our sparse BM25 (+ TF-IDF) against rank_bm25."""

from __future__ import annotations

import random
import time

import numpy as np
from rank_bm25 import BM25Okapi

from bench.common import ms, p50, p95, synthetic_topics, timings
from r42_app.core.kb import Topic
from r42_app.core.lexical import BM25Index, TfidfIndex, topic_terms
from r42_app.core.text import tokenize

SIZES = (1_000, 10_000, 100_000)
TOP = 50


def _same_result(ours: BM25Index, theirs: BM25Okapi, query: list[str]) -> bool:
    """Equal scores for every document, and the same top 50 (ties may swap places, positive scores only)."""
    a, b = ours.scores(query), theirs.get_scores(query)
    top_ours = [h.score for h in ours.search(query, TOP)]
    top_theirs = [s for s in sorted(b, reverse=True)[:TOP] if s > 0]
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12) and np.allclose(top_ours, top_theirs, rtol=1e-9))


def run() -> str:
    rows, fallback_rows = [], []
    for n in SIZES:
        raw = synthetic_topics(n, seed=n)
        topics = [Topic(t["id"], t["label"], t["type"], t["description"], t["content"]) for t in raw]
        docs = [topic_terms(t) for t in topics]
        rng = random.Random(7)
        queries = [tokenize(" ".join(rng.choice(raw)["description"].split()[:5])) for _ in range(60)]
        # Out-of-vocabulary compounds: the fallback path (a known word with a suffix glued on).
        oov = [[rng.choice(q) + "en" + "heid"] + q[:3] for q in queries[:30]]

        start = time.perf_counter()
        ours = BM25Index(docs)
        build_bm25 = time.perf_counter() - start
        start = time.perf_counter()
        TfidfIndex(docs)
        build_tfidf = time.perf_counter() - start
        start = time.perf_counter()
        theirs = BM25Okapi(docs)
        build_theirs = time.perf_counter() - start

        base_q = queries[: {1_000: 40, 10_000: 20, 100_000: 8}[n]]
        ours_each = [t for q in queries for t in timings(lambda q=q: ours.search(q, TOP), 1)]
        theirs_each = [t for q in base_q for t in timings(lambda q=q: np.argsort(-theirs.get_scores(q))[:TOP], 1)]
        equal = all(_same_result(ours, theirs, q) for q in base_q)
        fb = [t for q in oov for t in timings(lambda q=q: ours.search(q, TOP), 1)]
        rows.append(
            f"| {n:,} | {build_bm25 + build_tfidf:.2f} s | {build_theirs:.2f} s | {ms(p50(ours_each))} / {ms(p95(ours_each))} "
            f"| {ms(p50(theirs_each))} / {ms(p95(theirs_each))} | {p50(theirs_each) / p50(ours_each):.0f}x | "
            f"{'yes' if equal else 'NO'} ({len(base_q)} queries) |"
        )
        fallback_rows.append(f"| {n:,} | {ms(p50(fb))} / {ms(p95(fb))} |")
    return "\n".join([
        "### Lexical retrieval (BM25 top 50; ours = sparse BM25, build includes TF-IDF)",
        "",
        "| topics | build ours | build rank_bm25 | query p50 / p95 ours | query p50 / p95 rank_bm25 | p50 speed-up | equal scores and top 50 |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Queries with an out-of-vocabulary compound (fallback path), ours:",
        "",
        "| topics | query p50 / p95 |",
        "|---|---|",
        *fallback_rows,
    ])
