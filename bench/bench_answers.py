"""The offline answer's sentences (`python -m bench answers`): does the answer R42 gives without a model hold the
fact the question asks for?

Sets (bench/data): questions a learner would ask of the two seed KBs (demo: pensions, acme: a warehouse), each with
the topic that answers it and 1-3 short phrases copied from that topic's text, any one of which is the answer's core
("67 jaar"). Written on 2026-12-07 by a helper agent from the two KB files alone (it read no code), split at random
into `answers_dev.jsonl` (its misses read, the rule chosen on it) and `answers_holdout.jsonl` (run once the rule was
chosen, its rows not read).

Each question goes through the turn's own grounding (`Retriever.ground`, hybrid, top 5, the real PocketBase, Chroma
and e5) and its snippets; the answer is `offline_answer_for` as a turn without a model gives it. Side by side in the
same run, on the same snippets:

- **before**: the sentence picker as it was (frozen below): each sentence read on its own, headings dropped, and
  the last sentence before a snippet's "…" (between two passages) lost to it;
- **sections (shipped)**: a sentence read in its section (`SECTION_WEIGHT`): `core/chat.py` as it is;
- tried and not kept, each on top of the one before: **+ words weighted**, a question's word counted once, weighted
  by how few found sentences hold it (`WORDS_ONCE`, `IDF`); **+ pointing back**, a sentence that opens by pointing
  back scored with the one before (`CONTINUATION`);
- **in the snippets**: the share whose fact is in the snippets' text at all (what a sentence picker can reach);
- **abstained**: the share the turn answers "niets gevonden" (core/relevance.py finds nothing relevant; all three
  pickers abstain alike).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.bench_conversation import TOP, seeded_retriever
from r42_app.chat.turn import _snippets_of, offline_answer_for
from r42_app.core import chat
from r42_app.core.chat import _ABBREVIATIONS, _BULLET, _INLINE, _SENTENCE, choose_sentences
from r42_app.core.retrieval import Snippet
from r42_app.core.text import link_texts, tokenize

DATA = Path(__file__).resolve().parent / "data"
SETS = [("development (its misses read)", "answers_dev.jsonl"), ("held out (rows not read)", "answers_holdout.jsonl")]


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _fold(text: str) -> str:
    return " ".join(re.sub(r"\*\*|__|`", "", text).lower().split())


def holds(text: str, facts: Sequence[str]) -> bool:
    """Whether `text` holds any of the `facts` (case and spacing aside)."""
    folded = _fold(text)
    return any(_fold(fact) in folded for fact in facts)


# ---- before (frozen from core/chat.py at b47dc5a, the baseline; not used by the app) ----

def _sentences_before(text: str) -> list[str]:
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith(("#", "|", ">")) or not line:
            blocks.append(" ".join(current))
            current = []
            continue
        if _BULLET.match(line):
            blocks.append(" ".join(current))
            current = [_BULLET.sub("", line)]
            continue
        current.append(line)
    blocks.append(" ".join(current))
    out: list[str] = []
    for block in blocks:
        merged: list[list[str]] = []
        for piece in _SENTENCE.split(_INLINE.sub("", link_texts(block)).strip()):
            if merged and _ABBREVIATIONS.search(merged[-1][-1]):
                merged[-1].append(piece)
            else:
                merged.append([piece])
        for sentence in (" ".join(" ".join(m).split()) for m in merged):
            whole = sentence[-1:] in (".", "!", "?") and (sentence[:1].isupper() or sentence[:1].isdigit())
            if whole and len(sentence.split()) >= 6:
                out.append(sentence)
    return out


def answer_before(question: str, snippets: Sequence[Snippet], texts: Mapping[str, str]) -> str:
    """The sentences the picker before chose, joined (the answer's chips and fallbacks left out: the facts are
    what is compared). Its scoring is frozen here; the choice among the scored sentences did not change."""
    terms = set(tokenize(question))
    stems = {t[:6] for t in terms if len(t) >= 6}
    scored = []
    for rank, s in enumerate(snippets):
        for pos, sentence in enumerate(_sentences_before(texts.get(s.slug) or s.text)):
            words = set(tokenize(sentence))
            score = len(terms & words) + 0.5 * len({w[:6] for w in words if len(w) >= 6} & stems)
            if score > 0:
                scored.append((score * (1.0 if rank == 0 else 0.85), s.ref, pos, sentence))
    ranked = sorted(scored, key=lambda r: (-r[0], r[1], r[2]))  # (the choice among them is the app's, unchanged)
    return " ".join(sentence for *_, sentence in choose_sentences(ranked))


# ---- the run ----

# core/chat.py as it is, and the variants tried on top of it
STEPS = [("sections (shipped)", {}),
         ("+ words weighted (tried)", {"WORDS_ONCE": True, "IDF": True}),
         ("+ pointing back (tried)", {"WORDS_ONCE": True, "IDF": True, "CONTINUATION": 0.9})]


def answer_with(settings: dict, grounding, index, snippets) -> str:
    kept = {name: getattr(chat, name) for name in settings}
    for name, value in settings.items():
        setattr(chat, name, value)
    try:
        return offline_answer_for(grounding, index, snippets)
    finally:
        for name, value in kept.items():
            setattr(chat, name, value)


def run() -> str:
    out = ["### The offline answer holds the fact asked for (hybrid, top 5; share of questions)", "",
           "| set | questions | before | " + " | ".join(label for label, _ in STEPS) +
           " | the fact in the snippets at all | abstained (\"niets gevonden\") |",
           "|---|---|---|" + "---|" * len(STEPS) + "---|---|"]
    times: dict[str, list[float]] = {"before": [], "shipped": []}
    misses: list[str] = []
    with seeded_retriever() as (retriever, _kb, tenants):
        only = [n for n in os.environ.get("R42_BENCH_SETS", "").split(",") if n]  # the dev set while choosing
        for title, name in SETS:
            if only and name not in only:
                continue
            data = rows(name)
            for kb in ("demo", "acme", "all"):
                part = [r for r in data if kb in ("all", r["kb"])]
                counts = [0] * (len(STEPS) + 3)
                for r in part:
                    tenant = tenants[r["kb"]]
                    grounding = retriever.ground(tenant, [r["question"]], "hybrid", TOP)
                    index = retriever.index(tenant)
                    snippets, _text = _snippets_of(grounding.result, index)
                    texts = {s.slug: f"{index.topics[index.by_slug[s.slug]].description}\n\n{s.text}"
                             for s in snippets if s.slug in index.by_slug}
                    grounded = grounding.result.relevance.grounded  # the same abstention (core/relevance.py)
                    started = time.perf_counter()
                    before = answer_before(grounding.understood.grounding, snippets, texts) if grounded else ""
                    times["before"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    answers = [offline_answer_for(grounding, index, snippets)]
                    times["shipped"].append(time.perf_counter() - started)
                    answers += [answer_with(settings, grounding, index, snippets) for _label, settings in STEPS[1:]]
                    reach = holds("\n".join(texts.values()), r["facts"])
                    for i, ok in enumerate([holds(before, r["facts"]), *(holds(a, r["facts"]) for a in answers),
                                            reach, not grounded]):
                        counts[i] += ok
                    if kb == "all" and name == "answers_dev.jsonl" and reach and not holds(answers[0], r["facts"]):
                        misses.append(r["qid"])
                n = len(part)
                out.append(f"| {title} | {kb} ({n}) | " + " | ".join(f"{c / n:.2f}" for c in counts) + " |")
    cpu = (f"CPU of the sentence picking per answer (every question of the sets run, and again for the all rows): "
           f"before p50 {1000 * statistics.median(times['before']):.2f} ms, shipped p50 "
           f"{1000 * statistics.median(times['shipped']):.2f} ms.")
    out += ["", cpu, ""]
    if misses:
        out += [("Development questions whose fact the snippets hold and the shipped answer misses: "
                f"{', '.join(misses)}."), ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
