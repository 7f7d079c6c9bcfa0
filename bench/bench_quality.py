"""Retrieval quality on the labelled sets in tests/data: nDCG@10, Recall@10 and MRR@10 per mode,
the compound fallback against plain lexical ranking, and injection-marker precision and recall."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import r42_app.core.lexical as lexical
from bench.common import pocketbase
from r42_app.core.injection import detect_injection_markers
from r42_app.core.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from r42_app.core.text import tokenize
from r42_app.services.embeddings import SentenceEmbedder
from r42_app.services.indexer import Indexer
from r42_app.services.kb_store import KBStore
from r42_app.services.retrieval import MODES, Retriever
from r42_app.services.seed import SEED_DIR

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run() -> str:
    out = []
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        from r42_app.services.vector_store import VectorStore

        kb = KBStore(pb)
        kb.import_document("demo", json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8")))
        embedder = SentenceEmbedder()
        vectors = VectorStore(path=Path(chroma_dir))
        Indexer(pb, kb, vectors, embedder).drain()
        retriever = Retriever(kb, vectors, embedder)
        tenant = kb.require_tenant("demo")
        for name, title in (("eval_nl.jsonl", "Dutch"), ("eval_en.jsonl", "English")):
            queries = rows(name)
            out += [f"### {title} evaluation set ({len(queries)} questions, tests/data/{name})", "",
                    "| mode | nDCG@10 | Recall@10 | MRR@10 |", "|---|---|---|---|"]
            for mode in MODES:
                ranked = [[h.slug for h in retriever.kb_search(tenant, q["query"], mode, 10).hits] for q in queries]
                out.append(f"| {mode} | {mean([ndcg_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | "
                           f"{mean([recall_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | "
                           f"{mean([mrr_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} |")
            out.append("")

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
