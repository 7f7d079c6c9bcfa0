"""Retrieval quality on the labelled sets in tests/data: nDCG@10, Recall@10 and MRR@10 per mode (with
how many queries fell back to another mode), on the Dutch demo KB and on an English KB we did not
write (Python's standard library docstrings, bench/en_stdlib_kb.py); the fusion alternatives we tried,
from the same candidates; the compound fallback against plain lexical ranking; and injection-marker
precision and recall."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import r42_app.core.lexical as lexical
import numpy as np

from bench import en_stdlib_kb
from bench.common import pocketbase
from r42_app.core.injection import detect_injection_markers
from r42_app.core.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from r42_app.core.text import tokenize
from r42_app.services.embeddings import SentenceEmbedder
from r42_app.services.indexer import Indexer
from r42_app.services.kb_store import KBStore
from r42_app.services.retrieval import (
    MODES,
    NEIGHBOURS_FROM,
    SEMANTIC_WEIGHT_ENGLISH,
    SEMANTIC_WEIGHT_MIN,
    Retriever,
    semantic_weight,
)
from r42_app.services.seed import SEED_DIR

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def fusion_alternatives(retriever: Retriever, vectors, embedder, sets) -> list[str]:
    """nDCG@10 of the fusions we tried, from the same BM25 candidates and the same stored vectors (exact
    cosine over every topic). 'shipped' is what kb_search does."""
    from r42_app.core.retrieval import chunk_text

    def minmax(v: np.ndarray) -> np.ndarray:
        lo, hi = v.min(), v.max()
        return np.ones_like(v) if hi - lo < 1e-9 else (v - lo) / (hi - lo)

    prepared = []
    for title, _name, tenant, queries in sets:
        index = retriever.index(tenant)
        slugs = [t.slug for t in index.topics]
        stored = vectors.topic_vectors(tenant.id, {s: len(chunk_text(t, max_chunks=1)) for s, t in zip(slugs, index.topics)})
        matrix = np.zeros((len(slugs), embedder.dimension), dtype=np.float32)
        pos = {s: i for i, s in enumerate(slugs)}
        for slug, vec in zip(stored.slugs, stored.embeddings):
            matrix[pos[slug]] = vec
        signals = []
        for q in queries:
            lexical = [(slugs[h.doc], h.score) for h in index.lexical_candidates(q["query"], 50)]
            sims = matrix @ embedder.encode([q["query"]])[0]
            signals.append((q, lexical, sims, index.coverage(q["query"])))
        prepared.append((title.split(" (")[0].split(":")[0], slugs, index.english, signals))

    def convex(weight, union: bool | str = True):
        def rank(slugs, english, lexical, sims, coverage):
            lex = dict(lexical)
            w = weight(coverage, english)
            joins = union is True or (union == "auto" and w >= NEIGHBOURS_FROM)
            near = [slugs[i] for i in np.argsort(-sims)[:20]] if joins else []
            cands = list(dict.fromkeys(list(lex) + near))
            if not cands:
                return []
            pos = {s: i for i, s in enumerate(slugs)}
            lex_v = np.array([lex.get(s, 0.0) for s in cands])
            lex_v = lex_v / lex_v.max() if lex_v.max() > 0 else lex_v
            fused = (1 - w) * lex_v + w * minmax(np.array([sims[pos[s]] for s in cands]))
            return [cands[i] for i in np.argsort(-fused, kind="stable")[:10]]
        return rank

    def rrf(k: int):
        def rank(slugs, english, lexical, sims, coverage):
            score: dict[str, float] = {}
            for r, (s, _) in enumerate(lexical):
                score[s] = score.get(s, 0.0) + 1 / (k + r)
            for r, i in enumerate(np.argsort(-sims)[:50]):
                score[slugs[i]] = score.get(slugs[i], 0.0) + 1 / (k + r)
            return sorted(score, key=lambda s: -score[s])[:10]
        return rank

    def coverage_only(base: float):
        return lambda coverage, english: base + (1 - base) * max(0.0, (0.5 - coverage) / 0.5)

    variants = [
        ("before: lexical top 50 re-ranked, w by coverage only (0.2 to 1)", convex(coverage_only(0.2), union=False)),
        ("union of lexical 50 + semantic 20, fixed w = 0.2", convex(lambda c, e: 0.2)),
        ("union, fixed w = 0.5", convex(lambda c, e: 0.5)),
        ("union, fixed w = 0.75", convex(lambda c, e: 0.75)),
        ("union, w by coverage only (0.2 to 1)", convex(coverage_only(0.2))),
        ("union, w by coverage only (0.75 to 1)", convex(coverage_only(0.75))),
        ("reciprocal rank fusion, k = 60", rrf(60)),
        ("reciprocal rank fusion, k = 10", rrf(10)),
        (f"shipped: union, w by KB language ({SEMANTIC_WEIGHT_MIN} Dutch to {SEMANTIC_WEIGHT_ENGLISH} English) "
         f"and coverage; the semantic top joins when w ≥ {NEIGHBOURS_FROM}", convex(semantic_weight, union="auto")),
    ]
    head = ["fusion"] + [title for title, *_ in prepared]
    out = ["### Fusion alternatives (nDCG@10, same candidates and vectors; exact cosine)", "",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for label, rank in variants:
        cells = []
        for _title, slugs, english, signals in prepared:
            cells.append(f"{mean([ndcg_at_k(rank(slugs, english, lex, sims, cov), q['rel']) for q, lex, sims, cov in signals]):.3f}")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out + [""]


def run() -> str:
    out = []
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        from r42_app.services.vector_store import VectorStore

        kb = KBStore(pb)
        kb.import_document("demo", json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8")))
        embedder = SentenceEmbedder()
        vectors = VectorStore(path=Path(chroma_dir))
        Indexer(pb, kb, vectors, embedder).drain()
        kb.import_document("stdlib", en_stdlib_kb.build(), tenant_name="Python standard library")
        Indexer(pb, kb, vectors, embedder).drain()
        retriever = Retriever(kb, vectors, embedder)
        tenant = kb.require_tenant("demo")
        stdlib = kb.require_tenant("stdlib")
        std_questions = en_stdlib_kb.questions()
        sets = [("Dutch questions, Dutch demo KB", "eval_nl.jsonl", tenant, rows("eval_nl.jsonl")),
                ("English questions, Dutch demo KB", "eval_en.jsonl", tenant, rows("eval_en.jsonl")),
                (f"English questions, English KB: Python {sys.version.split()[0]} standard library docstrings "
                 f"({len(retriever.index(stdlib).topics)} topics)", "eval_en_stdlib.jsonl", stdlib, std_questions)]
        for title, name, where, queries in sets:
            out += [f"### {title} ({len(queries)} questions, tests/data/{name})", "",
                    "| mode | nDCG@10 | Recall@10 | MRR@10 | fell back |", "|---|---|---|---|---|"]
            for mode in MODES:
                results = [retriever.kb_search(where, q["query"], mode, 10) for q in queries]
                ranked = [[h.slug for h in r.hits] for r in results]
                fell_back = sum(r.mode_used != mode for r in results)
                out.append(f"| {mode} | {mean([ndcg_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | "
                           f"{mean([recall_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | "
                           f"{mean([mrr_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | {fell_back} |")
            if name == "eval_en_stdlib.jsonl":
                for split in ("dev", "test"):
                    part = [q for q in queries if q["split"] == split]
                    cells = " | ".join(
                        f"{mode} {mean([ndcg_at_k([h.slug for h in retriever.kb_search(where, q['query'], mode, 10).hits], q['rel']) for q in part]):.3f}"
                        for mode in MODES)
                    out.append(f"| {split} half ({len(part)}): {cells} | | | |")
            out.append("")
        out += fusion_alternatives(retriever, vectors, embedder, sets)

        compound = [q for q in rows("eval_nl.jsonl") if q["kind"] == "compound"]
        index = retriever.index(tenant)
        slugs = [t.slug for t in index.topics]

        def ndcg_of(search) -> float:
            return mean([ndcg_at_k([slugs[h.doc] for h in search(tokenize(q["query"]), 10)], q["rel"]) for q in compound])

        with_fallback = (ndcg_of(index.bm25.search), ndcg_of(index.tfidf.search))
        saved = lexical.COMPOUND_WEIGHT
        lexical.COMPOUND_WEIGHT = 0.0
        try:
            without = (ndcg_of(index.bm25.search), ndcg_of(index.tfidf.search))
        finally:
            lexical.COMPOUND_WEIGHT = saved
        out += [f"### Compound fallback on the {len(compound)} compound questions (nDCG@10)", "",
                "| ranking | with fallback | without | gain |", "|---|---|---|---|",
                f"| BM25 (kb_search fts) | {with_fallback[0]:.3f} | {without[0]:.3f} | {with_fallback[0] - without[0]:+.3f} |",
                f"| TF-IDF (build_kb_context) | {with_fallback[1]:.3f} | {without[1]:.3f} | {with_fallback[1] - without[1]:+.3f} |",
                ""]

    out += ["### Injection markers", "", "| set | attacks | benign | precision | recall |", "|---|---|---|---|---|"]
    for name in ("injection_set.jsonl", "injection_heldout.jsonl"):
        labelled = rows(name)
        flagged = [bool(detect_injection_markers(r["text"])) for r in labelled]
        attack = [r["label"] == "attack" for r in labelled]
        tp = sum(f and a for f, a in zip(flagged, attack))
        fp = sum(f and not a for f, a in zip(flagged, attack))
        fn = sum(a and not f for f, a in zip(flagged, attack))
        out.append(f"| {name} | {sum(attack)} | {len(labelled) - sum(attack)} | {tp / (tp + fp):.3f} | {tp / (tp + fn):.3f} |")
    return "\n".join(out)
