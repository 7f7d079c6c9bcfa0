"""Long content (issue 22): the same text imported as short topics and packed into long articles; does the
answer passage still reach the model's prompt, and how do the rankings compare?

Sources and tenants. Two knowledge bases, each imported twice with the real pipeline (KBStore.import_document,
the indexer draining the outbox into Chroma with the product's default embedder, the Retriever):

- the Dutch demo KB (r42_app/seed/demo.json, 50 topics), asked the Dutch questions of tests/data/eval_nl.jsonl
  and the English ones of tests/data/eval_en.jsonl;
- the English standard-library KB (bench/en_stdlib_kb.py), asked its own questions. It has ~4,500 topics; to keep
  indexing at a few minutes on a small machine it is subsampled deterministically: every topic a question
  grades, plus every k-th other topic in slug order, STD_TOPICS in all (the graded topics are therefore denser
  among the distractors than in the whole KB).

"short" is the topics as they are, one topic each, relations left out (the long side cannot keep them).
"long" packs consecutive topics, in the KB's own order (the demo's file order is by theme, the stdlib's slug
order is by module), into articles of at least ARTICLE_WORDS words: slug `artikel-N`, label
`Artikel N: <first label> …`, and each original topic one `## <label>` section holding its description as the
first sentence and then its content, whose own headings move one level down (so they stay inside the section).

Answer passage. A question's answer topics are those it grades highest (3). An answer passage is a passage, as
the product splits it (TenantIndex.passages), that holds a sentence of an answer topic's content: in short the
topic's own passages, in long the passages of its article that hold text of its section. A passage is *in the
prompt* when its longest such sentence (its first SPAN_CHARS characters, defused as the fence defuses KB text,
whitespace collapsed) occurs in what the model received, whitespace collapsed: the system blocks (the KB context
block and the kb_search snippets) and the messages. A question is *reached* when one of its answer passages is
in the prompt. The description is not used for matching (short shows it on the context block's topic line,
long inside the section), so both sides are judged on the same content text.

The turn. One real chat turn per question through `run_turn` (hybrid, the product's default: context block and
five kb_search snippets), for a learner of the tenant, with a fake model that records the system blocks and
messages it receives and answers a short text (no tool call, so lookup_topic never helps). The same recorded
prompt is also split into its KB context block and its snippets, to show which part carries the answer.

Rankings. nDCG@10 per mode over the tenant's documents: for long, a question's relevant documents are the
articles holding its graded topics (an article's grade is the highest of its sections). The demo packs into 7
articles, all of which fit in the top 10, so compare long with *short as articles* (the short ranking with
each topic replaced by its article), not with the short nDCG itself.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import en_stdlib_kb
from bench.common import pocketbase
from r42_app.chat.turn import ChatDeps, run_turn
from r42_app.core.fence import defuse
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.metrics import ndcg_at_k
from r42_app.core.passages import split_sentences
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.llm import LLMEvent
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import MAX_TOP_K, MODES, Retriever
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
ARTICLE_WORDS = 1200  # an article closes once it holds this many words
ARTICLE_MAX_CHARS = 18_000  # ... or before it would pass this (topic content may hold at most 20,000)
STD_TOPICS = 1500  # standard-library topics kept (all graded ones among them)
SPAN_CHARS = 160  # the part of a passage's longest answer sentence looked for in the prompt
MIN_SENTENCE_CHARS = 20  # shorter sentences ("See also.") say nothing about which passage it is
SNIPPETS_HEADER = "\n\nRAG SNIPPETS\n"  # where system_blocks starts the snippets after the KB context block
MISSES_SHOWN = 4  # per set, the long questions that missed, in the report


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def squash(text: str) -> str:
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """The sentences of markdown text, line by line, whitespace collapsed (the splitter's own sentence rule)."""
    out = []
    for line in text.splitlines():
        if line.strip():
            out.extend(squash(s) for s in split_sentences(line.strip()))
    return [s for s in out if len(s) >= MIN_SENTENCE_CHARS]


# -- the two shapes of one knowledge base ---------------------------------------------------------------


def demoted(content: str) -> str:
    """Content with every heading one level down, so it stays inside its `## <label>` section."""
    return re.sub(r"(?m)^(\s{0,3})(#{1,5})(\s)", r"\1#\2\3", content)


def pack(topics: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """Consecutive topics packed into articles of ~ARTICLE_WORDS words; returns the articles and, per original
    topic slug, the slug of the article that holds its section."""
    articles: list[dict] = []
    home: dict[str, str] = {}
    group: list[dict] = []

    def section(t: dict) -> str:
        return f"## {t['label']}\n\n{t['description']}\n\n{demoted(t['content'])}".strip()

    def close() -> None:
        n = len(articles) + 1
        slug = f"artikel-{n}"
        label = f"Artikel {n}: {group[0]['label']} …"
        articles.append({"id": slug, "label": label[:120], "type": "concept",
                         "description": "Over " + ", ".join(t["label"] for t in group)[:480] + ".",
                         "content": "\n\n".join(section(t) for t in group)})
        home.update({t["id"]: slug for t in group})
        group.clear()

    for topic in topics:
        size = sum(len(section(t)) + 2 for t in group)
        if group and size + len(section(topic)) > ARTICLE_MAX_CHARS:
            close()
        group.append(topic)
        if sum(len(f"{t['description']} {t['content']}".split()) for t in group) >= ARTICLE_WORDS:
            close()
    if group:
        close()
    return articles, home


def stdlib_subset(questions: list[dict]) -> list[dict]:
    """STD_TOPICS of the standard-library topics, in slug order: every graded one, and every k-th of the rest."""
    topics = en_stdlib_kb.build()["topics"]
    graded = {slug for q in questions for slug in q["rel"]}
    rest = [t for t in topics if t["id"] not in graded]
    step = max(1, len(rest) // max(1, STD_TOPICS - len(graded)))
    keep = graded | {t["id"] for t in rest[::step][:STD_TOPICS - len(graded)]}
    return [t for t in topics if t["id"] in keep]


# -- the fake model and one turn -------------------------------------------------------------------------


class RecordingLLM:
    """A model (the chat turn's LLM protocol) that keeps what it receives and answers a short text."""

    model = "bench-fake"

    def __init__(self) -> None:
        self.received: list[tuple[list[dict], list[dict]]] = []

    async def stream(self, system: list[dict], messages: list[dict], tools: list[dict]):
        self.received.append((system, messages))
        yield LLMEvent("text", text="Zie de kennisbank.")
        yield LLMEvent("stop", stop_reason="end_turn", usage={"input_tokens": 1, "output_tokens": 1})


@dataclass
class Prompt:
    """What the model received in one turn, whitespace collapsed: all of it, and its two KB parts."""

    whole: str
    context: str
    snippets: str


async def prompts(deps: ChatDeps, llm: RecordingLLM, tenant: Tenant, queries: list[str]) -> list[Prompt]:
    user = SignedInUser(id="bench-learner", email="learner@bench.invalid", name="Bench", role="learner",
                        tenant_id=tenant.id, tenant_slug=tenant.slug, tenant_name=tenant.name)
    out = []
    for query in queries:
        llm.received.clear()
        async for _event in run_turn(user, [{"role": "user", "content": query}], deps):
            pass
        system, messages = llm.received[0]
        kb_block = system[1]["text"]
        context, _, snippets = kb_block.partition(SNIPPETS_HEADER)
        said = [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]) for m in messages]
        out.append(Prompt(squash("\n".join([b["text"] for b in system] + said)), squash(context), squash(snippets)))
    return out


# -- answer passages ---------------------------------------------------------------------------------------


@dataclass
class Shape:
    """One tenant: a shape (short or long) of one knowledge base, indexed."""

    name: str
    tenant: Tenant
    home: dict[str, str]  # original topic slug -> the document (topic or article) that holds it
    documents: int = 0
    passages: int = 0
    words: int = 0
    index_seconds: float = 0.0
    spans: dict[str, list[str]] = field(default_factory=dict)  # original topic slug -> its answer passages' spans

    def relevant(self, rel: dict[str, int]) -> dict[str, int]:
        """The question's graded topics as graded documents of this shape."""
        out: dict[str, int] = {}
        for slug, grade in rel.items():
            doc = self.home.get(slug)
            if doc is None:  # graded but not in this KB (en_stdlib_kb depends on the Python version)
                continue
            out[doc] = max(out.get(doc, 0), grade)
        return out


def locate(shape: Shape, retriever: Retriever, originals: list[dict], needed: set[str]) -> None:
    """Per original topic in `needed`: the span of each of its answer passages in this shape's index."""
    index = retriever.index(shape.tenant)
    shape.documents, shape.passages = len(index.live_topics()), len(index.passages)
    shape.words = sum(p.words for p in index.passages)
    for topic in originals:
        if topic["id"] not in needed:
            continue
        own = set(sentences(topic["content"]))
        doc = index.by_slug[shape.home[topic["id"]]]  # its topic (short) or its article (long)
        spans = []
        for p in index.passage_range(doc):
            shared = [s for s in sentences(index.passages[p].text) if s in own]
            if shared:
                spans.append(squash(defuse(max(shared, key=len)[:SPAN_CHARS])))
        shape.spans[topic["id"]] = spans


def answer_topics(rel: dict[str, int]) -> list[str]:
    top = max(rel.values())
    return [slug for slug, grade in rel.items() if grade == top]


def reached(shape: Shape, rel: dict[str, int], text: str) -> bool:
    return any(span in text for slug in answer_topics(rel) for span in shape.spans.get(slug, ()))


# -- the benchmark -----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    title: str
    questions: list[dict]
    shapes: dict[str, Shape]
    reach: dict[str, dict[str, list[bool]]] = field(default_factory=dict)  # shape -> part -> per question
    ndcg: dict[str, dict[str, float]] = field(default_factory=dict)  # shape -> mode -> mean nDCG@10
    prompts: dict[str, list[Prompt]] = field(default_factory=dict)


def import_shape(kb: KBStore, indexer: Indexer, name: str, slug: str, topics: list[dict],
                 home: dict[str, str]) -> Shape:
    """Import `topics` as tenant `slug` and index them (the outbox drained, timed)."""
    result = kb.import_document(slug, {"topics": topics, "relations": []}, tenant_name=name)
    started = time.perf_counter()
    stats = indexer.drain(tenant_id=result.tenant.id)
    if stats.failed_rows:
        raise RuntimeError(f"indexing {slug} failed for {stats.failed_rows} outbox rows")
    shape = Shape(name, result.tenant, home)
    shape.index_seconds = time.perf_counter() - started
    return shape


def evaluate(outcome: Outcome, retriever: Retriever, deps: ChatDeps, llm: RecordingLLM) -> None:
    queries = [q["query"] for q in outcome.questions]
    for name, shape in outcome.shapes.items():
        got = asyncio.run(prompts(deps, llm, shape.tenant, queries))
        outcome.prompts[name] = got
        outcome.reach[name] = {part: [reached(shape, q["rel"], getattr(p, part))
                                      for q, p in zip(outcome.questions, got)]
                               for part in ("whole", "context", "snippets")}
        outcome.ndcg[name] = {}
        for mode in MODES:
            ranked = [[h.slug for h in retriever.kb_search(shape.tenant, q["query"], mode, 10).hits]
                      for q in outcome.questions]
            outcome.ndcg[name][mode] = mean([ndcg_at_k(r, shape.relevant(q["rel"]))
                                             for r, q in zip(ranked, outcome.questions)])
    # The short ranking scored at the long side's granularity: its topics replaced by their articles (first
    # mention kept), so short and long are judged on the same documents.
    short, long = outcome.shapes["short"], outcome.shapes["long"]
    outcome.ndcg["short as articles"] = {}
    for mode in MODES:
        scores = []
        for q in outcome.questions:
            hits = retriever.kb_search(short.tenant, q["query"], mode, MAX_TOP_K).hits
            articles = list(dict.fromkeys(long.home[h.slug] for h in hits))
            scores.append(ndcg_at_k(articles, long.relevant(q["rel"])))
        outcome.ndcg["short as articles"][mode] = mean(scores)


def article_shown(outcome: Outcome, i: int) -> bool:
    """Whether some text of question i's answer article reached the long prompt (a fenced block of it: the
    context block's content or a snippet), whatever its sections."""
    shape, prompt = outcome.shapes["long"], outcome.prompts["long"][i]
    return any(f"topic={shape.home[slug]} " in prompt.whole for slug in answer_topics(outcome.questions[i]["rel"]))


def misses(outcome: Outcome, retriever: Retriever) -> list[str]:
    """The long questions whose answer passage missed the prompt (up to MISSES_SHOWN, first those short did
    reach): what reached it instead, the articles and the sections (heading) of each snippet's passages."""
    shape = outcome.shapes["long"]
    index = retriever.index(shape.tenant)
    out = []
    missed = [i for i, hit in enumerate(outcome.reach["long"]["whole"]) if not hit]
    for i in sorted(missed, key=lambda i: not outcome.reach["short"]["whole"][i]):  # first those short reached
        q = outcome.questions[i]
        answer = answer_topics(q["rel"])
        articles = sorted({shape.home[s] for s in answer})
        search = retriever.kb_search(shape.tenant, q["query"], "hybrid", 5)
        sections = [" / ".join(index.passages[p].heading[0] if index.passages[p].heading else "-" for p in h.passages)
                    for h in search.hits]
        shown = [f"{h.slug} ({headings})" for h, headings in zip(search.hits, sections)]
        context = retriever.build_kb_context(shape.tenant, q["query"]).content_slugs
        out.append(f"- {q.get('qid', '?')} \"{q['query']}\" (answer {', '.join(answer)} in {', '.join(articles)}, "
                   f"{'shown with other sections' if article_shown(outcome, i) else 'not shown'}; short "
                   f"{'reached' if outcome.reach['short']['whole'][i] else 'missed too'}): context block content from "
                   f"{', '.join(context) or 'none'}; snippets {'; '.join(shown) or 'none'}")
        if len(out) == MISSES_SHOWN:
            break
    return out


def run() -> str:
    started = time.perf_counter()
    nl, en = rows("eval_nl.jsonl"), rows("eval_en.jsonl")
    std_questions = en_stdlib_kb.questions()
    demo = json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8"))["topics"]
    std = stdlib_subset(std_questions)
    embedder = make_embedder()
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        vectors = VectorStore(path=Path(chroma_dir), model_id=embedder.model_id)
        indexer = Indexer(pb, kb, vectors, embedder)
        retriever = Retriever(kb, vectors, embedder)
        llm = RecordingLLM()
        deps = ChatDeps(retriever=retriever, kb=kb, llm=llm)

        sources = []
        for key, title, topics, sets in (
                ("nl", "Dutch demo KB", demo, [("Dutch questions", nl), ("English questions", en)]),
                ("std", f"standard library KB ({len(std)} topics)", std, [("English questions", std_questions)])):
            articles, home = pack(topics)
            shapes = {"short": import_shape(kb, indexer, f"{title}, short", f"{key}-short", topics,
                                            {t["id"]: t["id"] for t in topics}),
                      "long": import_shape(kb, indexer, f"{title}, long", f"{key}-long", articles, home)}
            needed = {slug for _, qs in sets for q in qs for slug in answer_topics(q["rel"])}
            for shape in shapes.values():
                locate(shape, retriever, topics, needed)
            for label, questions in sets:
                outcome = Outcome(f"{label}, {title}", questions, shapes)
                evaluate(outcome, retriever, deps, llm)
                sources.append(outcome)
        unlocated = [(o.title, name, q.get("qid")) for o in sources for name, s in o.shapes.items()
                     for q in o.questions if not any(s.spans.get(slug) for slug in answer_topics(q["rel"]))]
        miss_lines = [line for o in sources for line in misses(o, retriever)]
    return report(sources, unlocated, miss_lines, time.perf_counter() - started)


def report(sources: list[Outcome], unlocated: list, miss_lines: list[str], seconds: float) -> str:
    def share(values: list[bool]) -> str:
        return f"{mean([float(v) for v in values]):.2f}"

    out = ["### Long content: does the answer passage reach the model? (issue 22)", "",
           f"The same text as short topics and packed into articles of ≥ {ARTICLE_WORDS} words, one real chat turn "
           "per question (hybrid; a fake model records its prompt). *Reached*: an answer passage of the question's "
           "answer topic is in the prompt; *context block* / *snippets*: in that part alone; *long misses*: of the "
           "long questions missed, how many had their answer article's text in the prompt (other sections of it) "
           "and how many not at all.", "",
           "| questions | n | reached short | reached long | long − short | missed only short / only long "
           "| long misses: article shown / not | context block short / long | snippets short / long "
           "| prompt chars short / long |", "|---" * 10 + "|"]
    pooled: dict[str, dict[str, list[bool]]] = {"short": {}, "long": {}}
    shown_pooled: list[bool] = []

    def row(title: str, r: dict[str, dict[str, list[bool]]], shown: list[bool], chars: str) -> str:
        short, long = r["short"]["whole"], r["long"]["whole"]
        gap = mean([float(v) for v in long]) - mean([float(v) for v in short])
        missed = [a for a, hit in zip(shown, long) if not hit]
        return (f"| {title} | {len(short)} | {share(short)} | {share(long)} | {gap:+.2f} | "
                f"{sum(not a and b for a, b in zip(short, long))} / {sum(a and not b for a, b in zip(short, long))} | "
                f"{sum(missed)} / {len(missed) - sum(missed)} | "
                f"{share(r['short']['context'])} / {share(r['long']['context'])} | "
                f"{share(r['short']['snippets'])} / {share(r['long']['snippets'])} | {chars} |")

    for o in sources:
        for name in pooled:
            for part, values in o.reach[name].items():
                pooled[name].setdefault(part, []).extend(values)
        shown = [article_shown(o, i) for i in range(len(o.questions))]
        shown_pooled += shown
        chars = " / ".join(f"{mean([len(p.whole) for p in o.prompts[name]]):,.0f}" for name in ("short", "long"))
        out.append(row(o.title, o.reach, shown, chars))
    out.append(row("**all**", pooled, shown_pooled, ""))
    out += ["", "nDCG@10 per mode: short over its topics, long over its articles (the article holding a graded "
                "topic is relevant, with that grade); *short as articles* is the short ranking with each topic "
                "replaced by its article (first mention kept), so it is judged on the same documents as long:", "",
            "| questions | " + " | ".join(f"{m} short | {m} short as articles | {m} long" for m in MODES) + " |",
            "|---" * (1 + 3 * len(MODES)) + "|"]
    for o in sources:
        cells = [f"{o.ndcg['short'][m]:.3f} | {o.ndcg['short as articles'][m]:.3f} | {o.ndcg['long'][m]:.3f}"
                 for m in MODES]
        out.append(f"| {o.title} | " + " | ".join(cells) + " |")
    out += ["", "| tenant | documents | passages indexed | words | indexing |", "|---|---|---|---|---|"]
    seen = set()
    for o in sources:
        for shape in o.shapes.values():
            if shape.tenant.slug not in seen:
                seen.add(shape.tenant.slug)
                rate = shape.passages / max(shape.index_seconds, 1e-9)
                out.append(f"| {shape.name} | {shape.documents} | {shape.passages} | {shape.words:,} | "
                           f"{shape.index_seconds:.0f} s ({rate:.0f} passages/s) |")
    if unlocated:
        out += ["", f"Questions whose answer passage could not be located in the index (counted as missed): "
                    f"{', '.join(f'{qid} ({name})' for _, name, qid in unlocated)}"]
    if miss_lines:
        out += ["", "Long questions whose answer passage missed the prompt (first few per set), with what reached it:",
                ""] + miss_lines
    out += ["", f"Ran in {seconds:.0f} s."]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
