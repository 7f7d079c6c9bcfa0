"""Issue 44, finding 1: no request buys unbounded CPU through text processing. Every entry point that reads a
user's or the knowledge base's text (the passage splitter, what a reader sees, the fences, the injection markers
and the learned model's features, the tokenizer and search, the chat window's markdown, the offline answer, the
document planner and parsers, the graph's excerpt) is fed pathological text: long runs of every ASCII punctuation
character and of spaces, digits and letters, long lines, deep nesting, unclosed tags and brackets, and the exact
attacks of the issue. Each must stay linear.

How it is measured, so that it fails on a quadratic pattern and never flakes on a loaded 2-core CI machine: a case
runs on N characters and, when that could matter, on 4N, timed as the CPU time of this thread (`thread_time`: other
processes on the machine do not count, waiting for a core does not count). A case fails when it takes more than
BOUND_S already at N (linear code would take four times that at 4N), or when at 4N it takes more than BOUND_S *and*
more than RATIO times its time at N (linear: about 4; quadratic: 16). Only both together fail it: a linear case
slowed down by a busy machine stays under RATIO, and a noisy ratio of fast cases stays under BOUND_S. A case whose
time at N is so small that even a quadratic one could not reach BOUND_S at 4N is not run at 4N. The quadratic
patterns this replaced took seconds at N (the table rule of the issue 2.6 s, 12,500 rows of `|` 2.9 s, a run of `!` in
the markers 4.4 s).
"""

from __future__ import annotations

import gc
import json
import string
import time
from collections.abc import Callable

import pytest

from r42_app.core import injection
from r42_app.core.chat import clean_text, offline_answer, plain_sentences
from r42_app.core.chat_view import UICitation, copy_text, display
from r42_app.core.delta import describe_delta
from r42_app.core.documents import DocumentRefused, ParsedDocument, chip_label, plan_document
from r42_app.core.fence import defuse, fence
from r42_app.core.conversation import leaning, parse_rewrite, rewrite_request
from r42_app.core.graph import excerpt
from r42_app.core.injection_model import LinearModel
from r42_app.core.kb import Topic, filter_topics, slugify
from r42_app.core.passages import split_passages
from r42_app.core.retrieval import (
    TenantIndex,
    build_kb_context_from_index,
    clean_query,
    embedding_inputs,
    make_snippet,
)
from r42_app.core.text import fold, link_texts, tokenize, words
from r42_app.core.thread import parse
from r42_app.core.visible import visible_markdown, visible_text
from r42_app.services.adapters.documents import _has_html_tag, parse_bytes

pytestmark = pytest.mark.slow  # heavy: hostile inputs of growing size through every text entry point (~40 s)

N = 25_000  # characters; every case also runs at 4N = 100,000 when its time at N could matter
BOUND_S = 1.0
RATIO = 8.0


def _markers(text: str) -> list[str]:
    injection.use_learned_model(injection.learned_model())  # empties the markers' cache: read the text every time
    return injection.detect_injection_markers(text)


def _defused(text: str) -> str:
    defuse.cache_clear()
    return fence(text, "x", "X", [])


def _parsed(filename: str, text: str) -> object:
    try:
        return parse_bytes(filename, text.encode())
    except DocumentRefused as refused:  # a file without words: refused, as it should be
        return refused


_MODEL = LinearModel({1: 0.5, 2: -0.5}, 0.0, 0.5)  # the learned model's windows and features, whatever its weights
_CITED = [UICitation(1, "aow", "AOW", "p-0123456789")]


def _search(text: str) -> object:
    """A topic of `text` indexed, its context and search for `text` as a question (the services cap a question)."""
    index = TenantIndex.build([Topic("x", "Onderwerp", "concept", "Een onderwerp.", text)], [])
    context = build_kb_context_from_index(index, text)
    return context, index.passage_scores(clean_query(text)), index.named(clean_query(text)), embedding_inputs(
        index.topics[0])


ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "passages": lambda t: split_passages("x", t),
    "a follow-up and its rewrite": lambda t: (leaning(t), rewrite_request([("user", t), ("assistant", t), ("user", t)]),
                                              parse_rewrite(t, t), parse_rewrite("Question" + t + "?", "?")),
    "visible markdown": visible_markdown,
    "visible text": visible_text,
    "fence": _defused,
    "injection markers": _markers,
    "markers normalise": injection._normalise,
    "learned model": _MODEL.score,
    "tokenizer": lambda t: (fold(t), words(t), tokenize(t)),
    "links as text": link_texts,
    "search and context": _search,
    "chat message": clean_text,
    "chat markdown": lambda t: (display(t, _CITED), display(t, _CITED, streaming=True), copy_text(t)),
    "offline answer": lambda t: (plain_sentences(t), offline_answer(t[:2000], [make_snippet(1, Topic(
        "x", "X", "concept", "", t), t, 1.0, markers=[])], texts={"x": t})),
    "document plan": lambda t: plan_document(ParsedDocument("md", "", t), "document.md"),
    "markdown file": lambda t: _parsed("document.md", t),
    "text file": lambda t: _parsed("document.txt", t),
    "html check": _has_html_tag,
    "graph excerpt": excerpt,
    "names and labels": lambda t: (slugify(t), chip_label(t, 5, 6), filter_topics(
        [Topic("x", t[:120], "concept", t[:500])], t[:200])),
    "proposed edit": lambda t: describe_delta({"reason": t, "topics": [{"id": "x", "label": t, "type": "concept",
                                                                        "description": t, "content": t}]}),
    "stored thread": lambda t: parse(json.dumps({"messages": [{"id": "m", "role": "assistant", "content": t,
                                                               "status": "ok"}]})),
}


def _run(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _framed(head: str, unit: str, tail: str) -> Callable[[int], str]:
    return lambda n: head + _run(unit)(max(0, n - len(head) - len(tail))) + tail


INVISIBLE = ("\u200b", "\u200d", "\u202e", "\ufe0f", "\U000e0041", "\U000e0100", "\ue000", "\x00")
INPUTS: dict[str, Callable[[int], str]] = {
    # a run of one character: every ASCII punctuation character, blanks, digits, letters, invisible ones
    **{f"run of {c!r}": _run(c) for c in string.punctuation + " \t\n\r" + "0a" + "Aé…\u00a0😀" + "".join(INVISIBLE)},
    # the issue's own attacks: the table rule of 20 KB (1.45 s), a run of digits (1.9 s)
    "issue: table rule of spaces": _framed("| a |\n|--", " ", "x"),
    "issue: digits then a letter": _framed("", "1", "a"),
    # long lines and what a line may hold
    "heading of spaces": _framed("# a", " ", "b"),
    "heading of spaces and hashes": _framed("## a", " #", " b"),
    "rows of pipes": _run("|\n"),
    "rows of rules": _run("|--|\n"),
    "words": _run("woord "),
    "sentences": _run("Dit is een zin. "),
    # every sentence read with its section's heading (the offline answer): a long heading over many sentences
    "sentences under a long heading": lambda n: "# " + " ".join(f"kop{k}" for k in range(n // 12)) + "\n\n" + _run(
        "De kop1 staat in een zin. ")(n // 2),
    "snippet passages": _run("…\n§ a › kop\nDe kop staat in een zin.\n"),
    "abbreviations": _run("Zie bijv. "),
    "spaced letters": _run("a "),
    "dotted letters": _run("a."),
    "list items": _run("- a\n"),
    "blank lines": _run(" \n"),
    "lines of spaces": _framed("tekst", " ", "\n\nmeer"),
    "front matter title of spaces": _framed("---\ntitle: a", " ", "b\n---\n\nTekst.\n"),
    "page marks": _run("<!-- pagina 3 -->\n"),
    "page suffix of spaces": _framed("Handboek", " ", "(p. 5)x"),
    # deep nesting
    "nested quotes": _framed("", "> ", "x"),
    "nested list": _framed("", "- ", "x"),
    "nested brackets": lambda n: "[" * (n // 2) + "]" * (n - n // 2),
    "nested parentheses": lambda n: "(" * (n // 2) + ")" * (n - n // 2),
    "nested emphasis": _run("**_"),
    "nested divs": _run("<div>"),
    # what never closes
    "unclosed links": _run("[a"),
    "unclosed link targets": _run("[a]("),
    "unclosed images": _run("!["),
    "unclosed tags": _run("<svg "),
    "unclosed end tags": _framed("<svg>", "</svg ", ""),
    "unclosed comments": _run("<!--"),
    "unclosed void tags": _run("<link "),
    "unclosed paragraphs": _run("<p "),
    "unclosed code spans": _run("`a"),
    "unclosed fences": _run("```\n"),
    "escaped tags": _run("\\<svg>"),
    # what the fences and markers look for
    "forged delimiters": _run("---SNIPPET END---"),
    "spaced delimiter letters": _run("S N I P P E T "),
    "signs then a word": _framed("", "-", "END"),
    "refs": _run("[ref:1]"),
    "unfinished refs": _framed("[ref:", "1", "x"),
    "header keys": _run("suspect=false "),
    "marker words": _run("ignore the "),
    "marker phrase": _run("ignore all previous instructions "),
    "role lines": _run("system:\n"),
    "role tags": _framed("[", " ", "x"),
    "tool names": _run("roep r42__a "),
    "leetspeak": _run("1gn0r3 "),
    "digits in words": _run("a1"),
    "letters then digits": _framed("", "1", " a"),
    # invisible characters between letters, emoji sequences
    "tags between letters": _run("a\U000e0041"),
    "joiners between emoji": _run("👩\u200d"),
    "selectors after a heart": _run("❤\ufe0f\ufe0f"),
}


@pytest.fixture(autouse=True)
def _no_collections():
    """The garbage collector waits while a case is timed (a full collection of this test process can take longer
    than a case); it runs before and after each test."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()
    gc.collect()


def _cpu(fn: Callable[[str], object], text: str) -> float:
    start = time.thread_time()
    fn(text)
    return time.thread_time() - start


def _too_slow(fn: Callable[[str], object], make: Callable[[int], str], n: int = N) -> str:
    """Why `fn` on the text `make` builds is not linear, or "" when it is (see the module docstring)."""
    small = _cpu(fn, make(n))
    if small > BOUND_S:
        return f"{small:.2f} s at {n:,} characters"
    if small * 16 <= BOUND_S:  # even a quadratic case would stay under the bound at 4N
        return ""
    large = _cpu(fn, make(4 * n))
    if large > BOUND_S and large > RATIO * small:
        small = min(small, _cpu(fn, make(n)))  # measured again before it is called quadratic
        large = min(large, _cpu(fn, make(4 * n)))
        if large > BOUND_S and large > RATIO * small:
            return f"{small:.3f} s at {n:,} characters, {large:.2f} s at {4 * n:,}"
    return ""


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_text_entry_point_is_linear_on_pathological_text(entry):
    fn = ENTRY_POINTS[entry]
    slow = []
    for name, make in INPUTS.items():
        why = _too_slow(fn, make)
        if why:
            slow.append(f"{name}: {why}")
            if len(slow) == 3:  # enough to say so (each took seconds)
                break
    assert not slow, f"{entry} is not linear on " + "; ".join(slow)


def test_a_question_against_nested_labels_is_linear():
    """An admin's labels "a", "a a", ... (60 words) and a learner's question of the same word: which topics the
    question names (comparing every pair of matches was quadratic: 250 words took 4.6 s)."""
    index = TenantIndex.build([Topic(f"t{k}", " ".join(["a"] * k), "concept", "", "Inhoud.") for k in range(1, 61)],
                              [])

    def name(question: str) -> object:
        return index.named(question), index.labels.find(question)

    # the question the services pass on is at most 2,000 characters (core/retrieval.py clean_query)
    assert not _too_slow(name, _run("a "), n=500)
    assert not _too_slow(lambda q: index.passage_scores(q), _run("a"), n=500)  # one long word: its compounds


def test_the_issues_topic_is_read_at_once():
    """The topic of the issue: a 20 KB table rule line (1.45 s each time a tab opened it), and 20,000 digits."""
    topic = "| a |\n|--" + " " * 19950 + "x"
    started = time.thread_time()
    passages = split_passages("x", topic)
    assert passages and passages[0].text.startswith("| a |")
    assert injection._normalise("1" * 20_000) == "1" * 20_000
    assert time.thread_time() - started < BOUND_S
