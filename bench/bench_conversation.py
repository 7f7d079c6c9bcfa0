"""Follow-up questions (issue 47): the sources of a turn asked inside its conversation, alone, and as a standalone
rewrite written by hand, per approach, side by side in one run; and the CPU a turn's grounding adds.

Sets (tests/data, one JSON object a line: `turns` (the user's earlier questions), `question`, `standalone`, `rel`,
`kind` followup or switch, `lang`):

- conversations_dev.jsonl: written by the lead engineer; the approach and its numbers were tuned on it;
- conversations_dev2.jsonl: written later by a second author (a helper agent) without seeing the code, to tune on
  more than one author's follow-ups; tuned on too;
- conversations_test.jsonl: written by another author on the demo KB, without seeing the code; the test set until
  2026-12-06, when its rows were read: a development set since;
- conversations_acme.jsonl: the same author, on the second seed KB (a warehouse, not pensions); the same;
- conversations_holdout.jsonl and conversations_holdout_acme.jsonl: written on 2026-12-06 by a fresh author from the
  two KB files alone; held out (run once after the change of that day was chosen; rows never read).

Approaches (the same Retriever, the same e5 vectors, hybrid mode, top 5 as a turn's sources):

- alone: the last question alone (R42 before issue 47);
- joined: the last question joined to the two user questions before it, always;
- fused 0.5: both searches, their rankings fused half and half, always;
- fused by leaning (shipped): core/conversation.py reads how much the question leans on the conversation, and
  fuses by that (`Understood.weight`; a question that stands on its own is searched alone);
- standalone rewrite: the hand-written rewrite, alone (the ceiling an offline method aims at).

Variants measured and not kept (off unless asked for): R42_BENCH_GRAPH (the earlier topic's neighbours in the graph),
R42_BENCH_ADAPT (towards the context as far as the question's words are unknown to the KB), R42_BENCH_ANSWER=1 (the
offline answer R42 gave to the question before, in the context), R42_BENCH_WITHIN (the search in context picks
the candidates, the question's own search orders them by this share), R42_BENCH_GAIN (the leaning raised by how
much nearer the question's best passage is in its context than alone), R42_BENCH_EMPHASIS (the question's own
words this many times more in the search in context), R42_BENCH_PRODUCT (the two searches' normalised scores
multiplied, not added: a topic must be found by both), R42_BENCH_NAMED (a topic that a sentence of the
conversation's first three topics names, where that sentence holds the question's own words, raised by this share
of the weight: the KB's own bridge from the earlier topic to a neighbour), R42_BENCH_ORACLE=1 (not a method: per
question the best of six weights by its own labels, the ceiling of any rule that weighs the two searches).
R42_BENCH_SETS: only these sets; R42_BENCH_NO_CPU: no CPU table.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from bench.common import pocketbase
from r42_app.chat.turn import offline_answer_for
from r42_app.core.chat import REF_RE
from r42_app.core.conversation import Understood, own_words, with_gain
from r42_app.core.metrics import ndcg_at_k
from r42_app.core.passages import split_sentences
from r42_app.core.text import tokenize
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = [("dev (tuned on)", "conversations_dev.jsonl", "demo"),
        ("dev 2 (tuned on)", "conversations_dev2.jsonl", "demo"),
        ("dev 3 (tuned on; the first test set)", "conversations_test.jsonl", "demo"),
        ("dev 4, acme KB (tuned on; the first test set)", "conversations_acme.jsonl", "acme"),
        ("held out (never read)", "conversations_holdout.jsonl", "demo"),
        ("held out, acme KB (never read)", "conversations_holdout_acme.jsonl", "acme")]
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


ADAPT_VARIANTS = [float(b) for b in os.environ.get("R42_BENCH_ADAPT", "").split(",") if b]
GRAPH_VARIANTS = [float(b) for b in os.environ.get("R42_BENCH_GRAPH", "").split(",") if b]
ANSWER_VARIANT = bool(os.environ.get("R42_BENCH_ANSWER"))  # the earlier turn's offline answer in the context
# a leaning question: the search in context picks the candidates (its first R42_BENCH_WITHIN_N), the question's own
# search weighs in by this share among them only ("within"), e.g. R42_BENCH_WITHIN=0.3,0.5
WITHIN_VARIANTS = [float(b) for b in os.environ.get("R42_BENCH_WITHIN", "").split(",") if b]
WITHIN_N = int(os.environ.get("R42_BENCH_WITHIN_N", "8"))
# the conversation's gain (core/conversation.py with_gain): "slope@from" pairs, e.g. R42_BENCH_GAIN=10@0.02,20@0.02
GAIN_VARIANTS = [tuple(float(x) for x in v.split("@")) for v in os.environ.get("R42_BENCH_GAIN", "").split(",") if v]
# the question's own words once more in the search in context (so the earlier question does not drown them)
EMPHASIS_VARIANTS = [int(n) for n in os.environ.get("R42_BENCH_EMPHASIS", "").split(",") if n]
# both searches must agree: a fused question's topics by the product of their two normalised scores (the question's
# own search to the power `share`, the search in context to 1 - share; a topic one search misses counts `floor`):
# "share@floor" pairs, e.g. R42_BENCH_PRODUCT=0.5@0.3
PRODUCT_VARIANTS = [tuple(float(x) for x in v.split("@")) for v in os.environ.get("R42_BENCH_PRODUCT", "").split(",")
                    if v]
# the KB's own bridges: a fused question's own words (those its earlier questions do not hold) in a sentence of the
# search in context's first NAMED_TOPICS topics; the topics that sentence names by label (the earlier questions' own
# named topics aside) raised by share x weight, e.g. R42_BENCH_NAMED=0.1,0.2
NAMED_VARIANTS = [float(b) for b in os.environ.get("R42_BENCH_NAMED", "").split(",") if b]
NAMED_TOPICS = 3
# the ceiling of every way of weighing the two searches: per question, the best of these weights by its own labels
# (reads the answer key: a bound for any rule that sets the weight, not a method)
ORACLE_WEIGHTS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
ORACLE_VARIANT = bool(os.environ.get("R42_BENCH_ORACLE"))


def earlier_answer(retriever: Retriever, tenant, questions: list[str]) -> str:
    """The offline answer R42 gave to the last of `questions` (as a turn without a model writes it), chips out."""
    grounding = retriever.ground(tenant, questions, "hybrid", TOP)
    index = retriever.index(tenant)
    return REF_RE.sub("", offline_answer_for(grounding, index, grounding.result.snippets(index))).strip()


def approaches(retriever: Retriever):
    def slugs(result) -> list[str]:
        return [h.slug for h in result.hits]

    def alone(tenant, row):
        return slugs(retriever.kb_search(tenant, row["question"], "hybrid", TOP))

    def forced(weight: float):
        def rank(tenant, row):
            understood = Understood(row["question"], tuple(row["turns"][-2:]), 1.0)
            return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP, weight=weight))
        return rank

    def shipped(tenant, row):
        understood = retriever.understand(tenant, [*row["turns"], row["question"]])
        return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))

    def graph(boost: float):
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]], earlier_topic=True)
            return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP, graph=boost))
        return rank

    def adapted(by: float):
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP, adapt=by))
        return rank

    def with_answer(tenant, row):  # the earlier questions and the answer to the last of them, as the context
        understood = retriever.understand(tenant, [*row["turns"], row["question"]])
        if understood.fuses:
            understood = replace(understood, context=(*understood.context,
                                                      earlier_answer(retriever, tenant, row["turns"])))
        return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))

    def within(share: float):
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            if not understood.leans:
                return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))
            alone = {h.slug: h.score for h in retriever.kb_search(tenant, row["question"], "hybrid", 20).hits}
            joined = retriever.kb_search(tenant, understood.in_context, "hybrid", 20).hits[:WITHIN_N]
            if not joined:
                return []
            top_j = max(h.score for h in joined) or 1.0
            top_a = max((alone.get(h.slug, 0.0) for h in joined), default=0.0) or 1.0
            scored = [((1 - share) * h.score / top_j + share * max(0.0, alone.get(h.slug, 0.0)) / top_a, h.slug)
                      for h in joined]
            return [slug for _, slug in sorted(scored, key=lambda x: -x[0])][:TOP]
        return rank

    def gained(slope: float, start: float):  # the leaning raised by the conversation's gain (core `with_gain`)
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            if understood.context:
                alone = retriever.kb_search(tenant, understood.question, "hybrid", 1).relevance.semantic
                joined = retriever.kb_search(tenant, understood.in_context, "hybrid", 1).relevance.semantic
                if alone is not None and joined is not None:
                    understood = replace(understood, leaning=with_gain(understood.leaning, joined - alone, slope,
                                                                       start))
            return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))
        return rank

    def emphasised(times: int):
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            own = " ".join(own_words(row["question"]))
            if understood.fuses and own:
                understood = replace(understood, context=(*understood.context, *[own] * times))
            return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))
        return rank

    def product(share: float, floor: float):
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            if not understood.fuses:
                return slugs(retriever.search_in_conversation(tenant, understood, "hybrid", TOP))
            pool = 20
            sides = []
            for text in (row["question"], understood.in_context):
                hits = retriever.kb_search(tenant, text, "hybrid", pool).hits
                top = max((h.score for h in hits), default=0.0) or 1.0
                sides.append({h.slug: max(0.0, h.score) / top for h in hits})
            alone, joined = sides
            scored = {slug: max(floor, alone.get(slug, 0.0)) ** share * max(floor, joined.get(slug, 0.0)) ** (1 - share)
                      for slug in alone.keys() | joined.keys()}
            return [slug for slug, _ in sorted(scored.items(), key=lambda kv: -kv[1])][:TOP]
        return rank

    def stems(text_or_tokens) -> set[str]:  # a word by its first six letters, as the offline answer matches words
        tokens = tokenize(text_or_tokens) if isinstance(text_or_tokens, str) else text_or_tokens
        return {t[:6] for t in tokens}

    def bridged(share: float):
        def rank(tenant, row):
            understood = retriever.understand(tenant, [*row["turns"], row["question"]])
            result = retriever.search_in_conversation(tenant, understood, "hybrid", 20)
            own = stems(own_words(row["question"])) - stems(" ".join(understood.context))
            if not understood.fuses or not own:
                return slugs(result)[:TOP]
            index = retriever.index(tenant)
            earlier = {index.topics[i].slug for i in index.named(" ".join(understood.context))}
            near = [h.slug for h in retriever.kb_search(tenant, understood.in_context, "hybrid", NAMED_TOPICS).hits]
            named = {index.topics[i].slug for p in index.passages if p.slug in near
                     for sentence in split_sentences(p.text) if own & stems(sentence)
                     for _start, _end, i in index.labels.spans(sentence) if index.is_alive(i)} - earlier
            top = max((h.score for h in result.hits), default=0.0) or 1.0
            scores = {h.slug: h.score / top for h in result.hits}
            for slug in named:
                scores[slug] = scores.get(slug, 0.0) + share * understood.weight
            return [slug for slug, _ in sorted(scores.items(), key=lambda kv: -kv[1])][:TOP]
        return rank

    def best_weight(tenant, row):  # the labels choose the weight: what no rule can beat
        understood = retriever.understand(tenant, [*row["turns"], row["question"]])
        joined = Understood(row["question"], understood.context or tuple(row["turns"][-2:]), 1.0)
        ranked = [slugs(retriever.search_in_conversation(tenant, joined, "hybrid", TOP, weight=w))
                  for w in ORACLE_WEIGHTS]
        return max(ranked, key=lambda x: ndcg_at_k(x, row["rel"], 5))

    def standalone(tenant, row):
        return slugs(retriever.kb_search(tenant, row["standalone"], "hybrid", TOP))

    return [("alone (before)", alone), ("joined, always", forced(1.0)), ("fused 0.5, always", forced(0.5)),
            ("fused by leaning (shipped)", shipped), *((f"… + graph {b}", graph(b)) for b in GRAPH_VARIANTS),
            *((f"… + unknown words {a}", adapted(a)) for a in ADAPT_VARIANTS),
            *([("… + the earlier answer", with_answer)] if ANSWER_VARIANT else []),
            *((f"… within context {w}", within(w)) for w in WITHIN_VARIANTS),
            *((f"… + gain {a:g} from {b:g}", gained(a, b)) for a, b in GAIN_VARIANTS),
            *((f"… own words ×{n + 1}", emphasised(n)) for n in EMPHASIS_VARIANTS),
            *((f"… product {a:g} floor {b:g}", product(a, b)) for a, b in PRODUCT_VARIANTS),
            *((f"… + named in a bridge {b:g}", bridged(b)) for b in NAMED_VARIANTS),
            *([("best weight per question (ceiling)", best_weight)] if ORACLE_VARIANT else []),
            ("standalone rewrite (by hand)", standalone)]


def cpu_per_turn(retriever: Retriever, tenant, conversations: list[dict]) -> dict[str, list[float]]:
    """CPU seconds of a turn's grounding (the KB context and the sources; query embeddings included: the recent-query
    cache is emptied before each): the last question alone, as before issue 47; in its conversation with nothing
    cached; and in its conversation after the earlier turns were grounded in the same worker (their embeddings
    cached, as in a real conversation)."""
    out: dict[str, list[float]] = {"alone": [], "cold": [], "warm": []}

    def timed(key: str, work) -> None:
        t0 = time.process_time()
        work()
        out[key].append(time.process_time() - t0)

    for row in conversations:
        questions = [*row["turns"], row["question"]]
        retriever._queries = None
        timed("alone", lambda: (retriever.build_kb_context(tenant, row["question"]),
                                retriever.kb_search(tenant, row["question"], "hybrid", TOP)))
        retriever._queries = None
        timed("cold", lambda: retriever.ground(tenant, questions, "hybrid", TOP))
        retriever._queries = None
        for n in range(1, len(questions)):  # the earlier turns, as the worker grounded them
            retriever.ground(tenant, questions[:n], "hybrid", TOP)
        timed("warm", lambda: retriever.ground(tenant, questions, "hybrid", TOP))
    return out


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(round(0.95 * len(values))) - 1)]


@contextlib.contextmanager
def seeded_retriever() -> Iterator[tuple[Retriever, KBStore, dict]]:
    """A fresh PocketBase with the two seed KBs (demo, acme), indexed with e5 in a Chroma of its own, and a warm
    Retriever over them: (retriever, kb, {slug: tenant})."""
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
        for slug in tenants:  # warm: index, vectors, the model
            retriever.kb_search(tenants[slug], "pensioen", "hybrid", TOP)
        yield retriever, kb, tenants


def run() -> str:
    out = []
    with seeded_retriever() as (retriever, _kb, tenants):
        ranks = approaches(retriever)
        out += ["### Follow-up questions and topic switches: a turn's sources (hybrid, top 5)", "",
                ("Each cell: hit@3 (a relevant topic among the first 3 sources) / nDCG@5 (the set's graded labels). "
                 "The standalone rewrite is the same question rewritten by hand to stand on its own."), ""]
        out += ["| set | part | " + " | ".join(label for label, _ in ranks) + " |",
                "|---|---" + "|---" * len(ranks) + "|"]
        only = [n for n in os.environ.get("R42_BENCH_SETS", "").split(",") if n]  # e.g. the dev sets while tuning
        for title, name, slug in SETS:
            if only and name not in only:
                continue
            data = rows(name)
            parts = [("follow-ups", [r for r in data if r["kind"] == "followup"]),
                     ("… in Dutch", [r for r in data if r["kind"] == "followup" and r["lang"] == "nl"]),
                     ("… in English or mixed", [r for r in data if r["kind"] == "followup" and r["lang"] != "nl"]),
                     ("topic switches", [r for r in data if r["kind"] == "switch"])]
            for part_name, part in parts:
                if not part:
                    continue
                cells = []
                for _label, rank in ranks:
                    ranked = [rank(tenants[slug], r) for r in part]
                    cells.append(f"{mean([hit_at(x, r['rel']) for x, r in zip(ranked, part)]):.2f} / "
                                 f"{mean([ndcg_at_k(x, r['rel'], 5) for x, r in zip(ranked, part)]):.3f}")
                out.append(f"| {title} | {part_name} ({len(part)}) | " + " | ".join(cells) + " |")
        out.append("")
        if os.environ.get("R42_BENCH_NO_CPU"):
            return "\n".join(out)
        singles = [json.loads(line) for name in ("eval_nl.jsonl", "eval_en.jsonl", "abstain_nl.jsonl")
                   for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.startswith("{")]
        same = sum([h.slug for h in retriever.ground(tenants["demo"], [q["query"]], "hybrid", TOP).result.hits] ==
                   [h.slug for h in retriever.kb_search(tenants["demo"], q["query"], "hybrid", TOP).hits]
                   for q in singles)
        out += [(f"Single questions (the retrieval sets eval_nl, eval_en and abstain_nl, {len(singles)} questions): "
                 f"the sources of a first question through `Retriever.ground` equal kb_search's for {same} of "
                 f"{len(singles)}."), ""]
        every = [(tenants[slug], r) for _t, name, slug in SETS for r in rows(name)]
        cpu: dict[str, list[float]] = {"alone": [], "cold": [], "warm": []}
        for tenant in {id(t): t for t, _ in every}.values():
            for key, values in cpu_per_turn(retriever, tenant, [r for t, r in every if t is tenant]).items():
                cpu[key] += values
        out += [f"### CPU of a turn's grounding ({len(every)} conversations; ms; query embeddings included)", "",
                "| | p50 | p95 |", "|---|---|---|",
                *(f"| {label} | {1000 * statistics.median(cpu[key]):.1f} | {1000 * p95(cpu[key]):.1f} |"
                  for key, label in (("alone", "the last question alone (before: KB context + kb_search)"),
                                     ("cold", "`Retriever.ground` in its conversation, nothing cached"),
                                     ("warm", ("`Retriever.ground`, the earlier turns grounded before in the "
                                               "same worker")))),
                ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
