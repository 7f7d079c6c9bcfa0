"""Follow-up questions (issue 47): the sources of a turn asked inside its conversation, alone, and as a standalone
rewrite written by hand, per approach, side by side in one run; and the CPU a turn's grounding adds.

Sets (tests/data, one JSON object a line: `turns` (the user's earlier questions), `question`, `standalone`, `rel`,
`kind` followup or switch, `lang`):

- conversations_dev.jsonl: written by the lead engineer; the approach and its numbers were tuned on it;
- conversations_test.jsonl: written by another author on the demo KB, without seeing the code; never tuned on;
- conversations_acme.jsonl: the same author, on the second seed KB (a warehouse, not pensions); never tuned on.

Approaches (the same Retriever, the same e5 vectors, hybrid mode, top 5 as a turn's sources):

- alone: the last question alone (R42 before issue 47);
- joined: the last question joined to the two user questions before it, always;
- fused 0.5: both searches, their rankings fused half and half, always;
- fused by leaning (shipped): core/conversation.py reads how much the question leans on the conversation, and
  fuses by that (a question that stands on its own is searched alone);
- standalone rewrite: the hand-written rewrite, alone (the ceiling an offline method aims at).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import pocketbase
from r42_app.core.conversation import Understood
from r42_app.core.metrics import ndcg_at_k
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = [("dev (tuned on)", "conversations_dev.jsonl", "demo"),
        ("test (never tuned on)", "conversations_test.jsonl", "demo"),
        ("acme KB (never tuned on)", "conversations_acme.jsonl", "acme")]
TOP = 5


def rows(name: str) -> list[dict]:
    path = DATA / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def hit_at(ranked: list[str], rel: dict, k: int = 3) -> float:
    return 1.0 if any(rel.get(s, 0) > 0 for s in ranked[:k]) else 0.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def approaches(retriever: Retriever):
    def slugs(result) -> list[str]:
        return [h.slug for h in result.hits]

    def alone(tenant, row):
        return slugs(retriever.kb_search(tenant, row["question"], "hybrid", TOP))

    def forced(weight: float):
        def rank(tenant, row):
            understood = Understood(row["question"], tuple(row["turns"][-2:]), weight)
            return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))
        return rank

    def shipped(tenant, row):
        understood = retriever.understand(tenant, [*row["turns"], row["question"]])
        return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))

    def standalone(tenant, row):
        return slugs(retriever.kb_search(tenant, row["standalone"], "hybrid", TOP))

    return [("alone (before)", alone), ("joined, always", forced(1.0)), ("fused 0.5, always", forced(0.5)),
            ("fused by leaning (shipped)", shipped), ("standalone rewrite (by hand)", standalone)]


def cpu_per_turn(retriever: Retriever, tenant, conversations: list[dict]) -> tuple[list[float], list[float]]:
    """CPU seconds of a turn's sources, alone and as shipped (understanding included), each conversation 3 times."""
    before, after = [], []
    for _ in range(3):
        for row in conversations:
            t0 = time.process_time()
            retriever.kb_search(tenant, row["question"], "hybrid", TOP)
            t1 = time.process_time()
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            retriever.search_in_conversation(tenant, understood, "hybrid", TOP)
            t2 = time.process_time()
            before.append(t1 - t0)
            after.append(t2 - t1)
    return before, after


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(round(0.95 * len(values))) - 1)]


def run() -> str:
    out = []
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        for slug in ("demo", "acme"):
            kb.import_document(slug, json.loads((SEED_DIR / f"{slug}.json").read_text(encoding="utf-8")))
        embedder = make_embedder("")
        vectors = VectorStore(path=Path(chroma_dir), model_id=embedder.model_id)
        indexer = Indexer(pb, kb, vectors, embedder)
        for slug in ("demo", "acme"):
            kb.emit_reindex(kb.require_tenant(slug))
        indexer.drain()
        retriever = Retriever(kb, vectors, embedder)
        tenants = {slug: kb.require_tenant(slug) for slug in ("demo", "acme")}
        ranks = approaches(retriever)
        for slug in tenants:  # warm: index, vectors, the model
            retriever.kb_search(tenants[slug], "pensioen", "hybrid", TOP)
        out += ["### Follow-up questions and topic switches: a turn's sources (hybrid, top 5)", "",
                "hit@3: a relevant topic among the first 3 sources; nDCG@5 with the set's graded labels. "
                "The standalone rewrite is the same question rewritten by hand to stand on its own.", ""]
        head = ["approach"]
        cells: dict[str, list[str]] = {label: [] for label, _ in ranks}
        for title, name, slug in SETS:
            data = rows(name)
            if not data:
                continue
            for kind in ("followup", "switch"):
                part = [r for r in data if r["kind"] == kind]
                if not part:
                    continue
                head += [f"{title}: {kind}s ({len(part)}) hit@3", "nDCG@5"]
                for label, rank in ranks:
                    ranked = [rank(tenants[slug], r) for r in part]
                    cells[label] += [f"{mean([hit_at(x, r['rel']) for x, r in zip(ranked, part)]):.2f}",
                                     f"{mean([ndcg_at_k(x, r['rel'], 5) for x, r in zip(ranked, part)]):.3f}"]
        out += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        out += [f"| {label} | " + " | ".join(values) + " |" for label, values in cells.items()]
        out.append("")
        every = [(tenants[slug], r) for _t, name, slug in SETS for r in rows(name)]
        before: list[float] = []
        after: list[float] = []
        for tenant in {id(t): t for t, _ in every}.values():
            b, a = cpu_per_turn(retriever, tenant, [r for t, r in every if t is tenant])
            before += b
            after += a
        out += ["### CPU of a turn's sources (ms, every conversation of the sets, 3 times)", "",
                "| | p50 | p95 |", "|---|---|---|",
                f"| the last question alone (before) | {1000 * statistics.median(before):.1f} | "
                f"{1000 * p95(before):.1f} |",
                f"| in its conversation (shipped) | {1000 * statistics.median(after):.1f} | {1000 * p95(after):.1f} |",
                ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
