"""Knowledge-base text as data in the prompt: every block fenced, every fence unforgeable.

Whatever the knowledge base holds (an admin's topic, an imported document, an MCP tool's answer) reaches the
model only inside a block that opens with the line `---SNIPPET START--- <header>` and closes with
`---SNIPPET END---` (a search snippet), or the same with `---KB TEXT START---` / `---KB TEXT END---`; the
header, on the opening line itself, names the topic and says whether the text carries injection markers
(`suspect=true`). Inside a block, `defuse` turns anything that could pass for a fence or a citation into
plain text: any spelling of the delimiters (case, spacing, look-alike dashes, full-width letters, invisible
characters) and `[ref:N]`. So text can neither close its own block, nor open a block with a header of its
choosing (`suspect=false` becomes `suspect: false`), nor hand the model a citation number. One-line fields
(labels, descriptions) are also kept on one line, so they cannot start a line of their own.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from r42_app.core.visible import visible_text

SNIPPET_START = "---SNIPPET START---"  # a search snippet, cited as its [ref:N]
SNIPPET_END = "---SNIPPET END---"
TEXT_START = "---KB TEXT START---"  # other knowledge-base text: the context block's content, a looked-up topic
TEXT_END = "---KB TEXT END---"

# Look-alike letters a forger might write instead of ASCII ones (Cyrillic and Greek); NFKC takes care of
# full-width and mathematical letters and of signs such as "﹦" and "∶".
_CONFUSABLE = str.maketrans({
    **dict(zip("авсдеёзһіјклмнорԛѕтуԝхуАВСЕНІЈКМНОРЅТХУ",
               "abcdeeshijklmhopqstywxyABCEHIJKMHOPSTXY")),
    **dict(zip("αβεικνοτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "abeiknotuxABEZHIKMNOPTYX")),
})
_GAP = r"[^a-z0-9\n]{0,3}"  # between the letters of a word: "S N I P P E T", "S.N.I.P"


def _spaced(word: str) -> str:
    return _GAP.join(re.escape(c) for c in word)


_BLOCK = (rf"(?:(?:{_spaced('rag')}{_GAP})?{_spaced('snippet')}(?:{_GAP}s)?"
          rf"|{_spaced('kb')}{_GAP}{_spaced('text')}"
          rf"|{_spaced('knowledge')}{_GAP}{_spaced('base')}(?:{_GAP}(?:{_spaced('text')}|{_spaced('context')}))?"
          rf"|{_spaced('kb')})")
_EDGE = rf"(?:{_spaced('start')}|{_spaced('end')}|{_spaced('begin')}|{_spaced('stop')}|{_spaced('einde')})"
# Between the words, line breaks included ("SNIPPET\nEND" could read as one), however many ("END---------SNIPPET").
_SEP = r"[^a-z0-9]*+"
# The words of a delimiter and the signs after them; the signs before them are taken by `_delimiters`. (A
# pattern that began with that run was tried from each of its characters: 20,000 dashes took 9 s.)
_DELIMITER = re.compile(rf"(?:{_BLOCK}{_SEP}{_EDGE}|{_EDGE}{_SEP}(?:{_spaced('of')}{_SEP})?"
                        rf"(?:{_spaced('the')}{_SEP})?{_BLOCK})[^a-z0-9\n]*+")
_SIGN = re.compile(r"[^a-z0-9\n]")


def _delimiters(skeleton: str) -> list[tuple[int, int]]:
    """The spans of every delimiter-like run in `skeleton`, each with the signs on its line before it."""
    spans: list[tuple[int, int]] = []
    for m in _DELIMITER.finditer(skeleton):
        start, floor = m.start(), spans[-1][1] if spans else 0
        while start > floor and _SIGN.match(skeleton, start - 1):
            start -= 1
        spans.append((start, m.end()))
    return spans
# A citation as the model writes one: in square(-ish) brackets, or with a colon ("(ref. 3)" in prose stays).
_REF = re.compile(rf"(?:[\[【〔⟦]\s*{_spaced('ref')}{_GAP}(\d+)\s*[\]】〕⟧]?|{_spaced('ref')}\s*:\s*(\d+)\]?)")
_HEADER_KEY = re.compile(rf"({_spaced('suspect')}|{_spaced('markers')}|{_spaced('topic')}|{_spaced('label')})\s*=")
_REMOVED = "[scheidingsteken verwijderd]"


def _skeleton(text: str) -> str:
    """`text` letter for letter as a forger means it to be read: look-alikes and NFKC forms as ASCII, lower
    case. One character for one character, so a span found here is the same span in `text`."""
    out = []
    for ch in text.translate(_CONFUSABLE):
        folded = ch if ch.isascii() else unicodedata.normalize("NFKC", ch)
        out.append(folded.lower() if len(folded) == 1 else ch.lower()[:1] or ch)
    return "".join(c if len(c) == 1 else "?" for c in out)


@functools.lru_cache(maxsize=2048)  # the same passages are fenced turn after turn
def defuse(text: str) -> str:
    """Text that cannot end, open or forge a block, nor cite: see the module docstring."""
    if not text:
        return ""
    text = visible_text(text)  # what nobody sees goes (core/visible.py): tag characters spell text invisibly
    edits = [(start, end, _REMOVED) for start, end in _delimiters(_skeleton(text))]
    text = _apply(text, edits)
    for pattern, make in ((_REF, lambda m: f"(ref {m.group(1) or m.group(2)})"),
                          (_HEADER_KEY, lambda m: m.group(1) + ": ")):
        text = _apply(text, [(m.start(), m.end(), make(m)) for m in pattern.finditer(_skeleton(text))])
    return text


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end) span replaced, the spans in order and apart."""
    parts, at = [], 0
    for start, end, replacement in edits:
        parts += [text[at:start], replacement]
        at = end
    return "".join([*parts, text[at:]])


def one_line(text: str) -> str:
    """A one-line field, defused and on one line."""
    return re.sub(r"\s+", " ", defuse(text)).strip()


def quoted(text: str) -> str:
    """A one-line field as a quoted header value."""
    return repr(one_line(text))


def header(slug: str, label: str, markers: Sequence[str], ref: int | None = None) -> str:
    """The header of a block: its [ref:N] (snippets only), topic, label and suspect flag (with its markers)."""
    parts = ([f"[ref:{ref}]"] if ref is not None else []) + [f"topic={one_line(slug)}", f"label={quoted(label)}",
                                                              f"suspect={'true' if markers else 'false'}"]
    if markers:
        parts.append(f"markers={','.join(markers)}")
    return " ".join(parts)


def fence(text: str, slug: str, label: str, markers: Sequence[str], ref: int | None = None) -> str:
    """One block of knowledge-base text, fenced, its header on the opening line: a snippet when it has a
    [ref:N], else a KB TEXT block."""
    start, end = (SNIPPET_START, SNIPPET_END) if ref is not None else (TEXT_START, TEXT_END)
    return f"{start} {header(slug, label, markers, ref)}\n{defuse(text)}\n{end}"
