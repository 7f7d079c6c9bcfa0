"""A topic's learning content as passages: the unit R42 searches, quotes to the model and cites.

Content is split along its structure: a heading starts a new passage (and names it: its heading path; a
section of fewer than half PASSAGE_MIN_WORDS words joins the next one),
paragraphs, list items, table rows, code blocks and quotes are whole units that are never cut, and units
are packed into passages of roughly PASSAGE_MIN_WORDS to PASSAGE_MAX_WORDS words. A single unit longer than
that (a long paragraph, a long list item) is split between sentences, never inside one; a long table is
split between rows, each part repeating the header. A passage is a run of whole markdown blocks, so it
renders on its own (the topic page shows each passage under its own anchor).

A document's content may carry page marks (`<!-- pagina 5 -->`, core/documents.py): they never reach a
passage's text, every passage knows the pages it spans, and a new page starts a new passage (unless the one
before is still short), so a citation can name the page.

Ids are stable: a passage's anchor is a hash of its heading path and text, so an edit elsewhere in the topic
leaves it (and its stored vector) alone, and a citation keeps pointing at the same text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from r42_app.core.text import clip

PASSAGE_MIN_WORDS = 60
PASSAGE_MAX_WORDS = 200
# A heading names every passage under it (its heading path, searched and quoted with each): a "heading" of a whole
# page's words would be read again for each of them (quadratic: a 65,000-character heading over 78 passages took
# 1.4 s to index, and four times the text 5.4 s). The path keeps this much of a heading; the text keeps it whole.
HEADING_MAX_CHARS = 200
ANCHOR_PREFIX = "p-"
# The shape of every anchor _anchor makes ("p-", ten hex digits, a count for the same text again): a citation's
# anchor is checked against it wherever one comes from outside (pb_hooks/r42_rules.js holds the same pattern).
ANCHOR_RE = re.compile(r"^p-[0-9a-f]{10}(?:-[0-9]{1,4})?$")

_HEADING_START = re.compile(r"#{1,6}[ \t]")  # a heading line starts so; `read_heading` reads the rest
_PAGE_MARK = re.compile(r"^<!-- pagina (\d{1,5}) -->\s*$")  # core/documents.py page_mark: where a page starts
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_LIST_ITEM = re.compile(r"^(\s{0,3})(?:[-*+]|\d{1,9}[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|")
# Possessive throughout (every part stops where the next one begins): `\s*(\|...)*\|?\s*$` tried every split of a
# run of spaces between its two `\s*`, quadratic in a line's length ("|--" and 20,000 spaces took 1.45 s).
_TABLE_RULE = re.compile(r"^\s*+\|?\s*+:?-{2,}+:?\s*+(?:\|\s*+:?-{2,}+:?\s*+)*+\|?\s*+$")
_QUOTE = re.compile(r"^\s{0,3}>")
_HR = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
# A sentence ends at . ! ? (or …) followed by space and an upper-case letter, digit or quote; "bijv. de" is
# no end (lower case follows), nor is "art. 5" split from its number in practice (rare, and harmless).
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[A-ZÀ-ÖØ-Þ0-9\"'(\[])")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    """One passage of a topic: `text` is markdown exactly as written (whole blocks)."""

    slug: str
    anchor: str
    heading: tuple[str, ...]
    text: str
    order: int
    words: int
    page: int = 0  # the page of a document it starts on (from the content's page marks), 0 without
    last_page: int = 0

    @property
    def heading_path(self) -> str:
        return " › ".join(self.heading)


@dataclass(frozen=True)
class _Unit:
    text: str
    words: int
    heading: tuple[str, ...]
    starts_section: bool  # a heading line: a passage starts here
    kind: str  # heading | para | item | row | code | quote | rule | html
    table_head: str = ""  # a table row: the table's header and rule lines, repeated when the table is split
    page: int = 0
    starts_page: bool = False  # the first unit after a page mark: a passage starts here (the one before long enough)


def read_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of a heading line (`## Title ##`), the title without a closing run of #s; None for any other
    line. Read without a pattern: one with a lazy title tried its tail (blanks, #s, blanks, end) from each character
    of the title, quadratic in a heading of many spaces ("# a", 20,000 spaces and "b" took 1.2 s; the lazy pattern
    before that one was cubic)."""
    start = _HEADING_START.match(line)
    if start is None:
        return None
    title = line[start.end():].strip(" \t")
    bare = title.rstrip("#")
    if bare != title and bare[-1:] in (" ", "\t"):  # a closing run of #s, after a space
        title = bare.rstrip(" \t")
    return start.end() - 1, title


def heading_shift(content: str, top: int = 2) -> int:
    """How many levels `content`'s markdown headings move so that its highest is an h`top` (0 without headings): a
    topic's text sits under its page's h1, and most begin at "###" (a screen reader's list of headings then jumps
    from h1 to h3). Headings in code blocks do not count."""
    levels = [heading[0] for kind, lines in _blocks(content) if kind == "heading"
              for heading in [read_heading(lines[0])] if heading is not None]
    return top - min(levels) if levels else 0


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (whitespace inside kept as written)."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p]
    return parts or [text]


def _plain_heading(text: str) -> str:
    """A heading without its emphasis marks; an underscore inside a word (`time.thread_time`) stays."""
    return re.sub(r"(?<![^\W_])_+|_+(?![^\W_])", "", re.sub(r"[*`]+", "", text)).strip()


def _blocks(content: str) -> Iterator[tuple[str, list[str]]]:
    """(kind, lines) of the markdown blocks of `content`, in order."""
    lines = content.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            j = i + 1
            while j < n and not lines[j].lstrip().startswith(fence.group(1)):
                j += 1
            yield "code", lines[i:j + 1]
            i = j + 1
            continue
        if _PAGE_MARK.match(line):
            yield "page", [line]
            i += 1
            continue
        if read_heading(line):
            yield "heading", [line]
            i += 1
            continue
        if _HR.match(line):
            yield "rule", [line]
            i += 1
            continue
        if _TABLE_ROW.match(line):
            j = i
            while j < n and _TABLE_ROW.match(lines[j]):
                j += 1
            yield "table", lines[i:j]
            i = j
            continue
        if _QUOTE.match(line):
            j = i
            while j < n and lines[j].strip() and (_QUOTE.match(lines[j]) or not _starts_block(lines[j])):
                j += 1
            yield "quote", lines[i:j]
            i = j
            continue
        if _LIST_ITEM.match(line):
            j = i
            while j < n:
                if not lines[j].strip():
                    # a blank line ends the list unless an item or an indented continuation follows
                    k = j + 1
                    if k < n and (_LIST_ITEM.match(lines[k]) or lines[k].startswith(("  ", "\t"))):
                        j = k
                        continue
                    break
                if j > i and _starts_block(lines[j]) and not _LIST_ITEM.match(lines[j]) \
                        and not lines[j].startswith(("  ", "\t")):
                    break
                j += 1
            yield "list", lines[i:j]
            i = j
            continue
        if line.lstrip().startswith("<"):
            j = i
            while j < n and lines[j].strip():
                j += 1
            yield "html", lines[i:j]
            i = j
            continue
        j = i
        while j < n and lines[j].strip() and not (j > i and _starts_block(lines[j])):
            j += 1
        yield "para", lines[i:j]
        i = j


def _starts_block(line: str) -> bool:
    return bool(_PAGE_MARK.match(line) or read_heading(line) or _FENCE.match(line) or _TABLE_ROW.match(line)
                or _HR.match(line) or _QUOTE.match(line) or _LIST_ITEM.match(line))


def _list_items(lines: list[str]) -> list[str]:
    """The top-level items of a list block, each with its continuation lines."""
    items: list[list[str]] = []
    first = _LIST_ITEM.match(lines[0])
    indent = len(first.group(1)) if first else 0
    for line in lines:
        m = _LIST_ITEM.match(line)
        if m and len(m.group(1)) <= indent:
            items.append([line])
        elif items:
            items[-1].append(line)
        else:
            items.append([line])
    return ["\n".join(item).rstrip() for item in items]


def _units(content: str) -> list[_Unit]:
    """The content as units that are never cut, each knowing the heading path it stands under."""
    units: list[_Unit] = []
    path: list[tuple[int, str]] = []
    page = 0
    new_page = False
    for kind, lines in _blocks(content):
        heading = tuple(h for _, h in path)
        if kind == "page":
            mark = _PAGE_MARK.match(lines[0])
            assert mark is not None
            page, new_page = int(mark.group(1)), True
            continue
        before = len(units)
        if kind == "heading":
            found = read_heading(lines[0])
            assert found is not None  # _blocks called it a heading
            level, title = found[0], _plain_heading(found[1])
            if len(title) > HEADING_MAX_CHARS:  # (only then: a heading's path is in its passages' anchors)
                title = clip(title, HEADING_MAX_CHARS)
            path = [(lv, h) for lv, h in path if lv < level] + [(level, title)]
            units.append(_Unit(lines[0], word_count(title), tuple(h for _, h in path), True, "heading"))
        elif kind == "table":
            rule = next((k for k, line in enumerate(lines[:3]) if _TABLE_RULE.match(line)), None)
            head_lines = lines[: rule + 1] if rule is not None else []
            head = "\n".join(head_lines)
            rows = lines[len(head_lines):] or lines
            for k, row in enumerate(rows):
                text = (head + "\n" + row) if k == 0 and head else row
                units.append(_Unit(text, word_count(row.replace("|", " ")) + (word_count(head.replace("|", " "))
                                   if k == 0 else 0), heading, False, "row", head))
        elif kind == "list":
            for item in _list_items(lines):
                units.extend(_long_unit(item, heading, "item"))
        elif kind == "para":
            units.extend(_long_unit("\n".join(lines), heading, "para"))
        else:
            text = "\n".join(lines)
            units.append(_Unit(text, word_count(text), heading, False, kind))
        if page:
            units[before:] = [dataclasses.replace(u, page=page, starts_page=new_page and k == 0)
                              for k, u in enumerate(units[before:])]
            new_page = new_page and len(units) == before
    return units


def _long_unit(text: str, heading: tuple[str, ...], kind: str) -> list[_Unit]:
    """A paragraph or list item; one longer than a passage becomes several, split between sentences."""
    words = word_count(text)
    if words <= PASSAGE_MAX_WORDS:
        return [_Unit(text, words, heading, False, kind)]
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        n = word_count(sentence)
        if current and count + n > PASSAGE_MAX_WORDS * 3 // 4:
            pieces.append(" ".join(current))
            current, count = [], 0
        current.append(sentence.strip())
        count += n
    if current:
        pieces.append(" ".join(current))
    return [_Unit(p, word_count(p), heading, False, kind + "-part") for p in pieces]


def _join(units: Sequence[_Unit]) -> str:
    """Units back into markdown: list items and table rows stay on adjacent lines, blocks get a blank line."""
    out: list[str] = []
    for k, unit in enumerate(units):
        text = unit.text
        if unit.kind == "row" and k and units[k - 1].kind != "row" and unit.table_head and \
                not text.startswith(unit.table_head):
            text = unit.table_head + "\n" + text  # a table continued in a new passage repeats its header
        if k == 0 and unit.kind == "row" and unit.table_head and not text.startswith(unit.table_head):
            text = unit.table_head + "\n" + text
        if k and unit.kind == units[k - 1].kind and unit.kind in ("item", "row"):
            out.append("\n" + text)
        else:
            out.append(("\n\n" if k else "") + text)
    return "".join(out).strip()


def _anchor(slug: str, heading: tuple[str, ...], text: str, seen: dict[str, int]) -> str:
    digest = hashlib.sha1("\x1f".join((slug, *heading, " ".join(text.split()))).encode()).hexdigest()
    anchor = ANCHOR_PREFIX + digest[:10]
    k = seen[anchor] = seen.get(anchor, 0) + 1  # the same text again under the same heading: -2, -3, ...
    return anchor if k == 1 else f"{anchor}-{k}"


def split_passages(slug: str, content: str, min_words: int = PASSAGE_MIN_WORDS,
                   max_words: int = PASSAGE_MAX_WORDS) -> list[Passage]:
    """The passages of a topic's content, in order (an empty list for empty content)."""
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    count = text_words = 0  # the words of `current`, and those not in its headings (kept as it grows: a passage
    # of units without words, such as 10,000 rows of `|`, grows without end, and summing it again per unit was
    # quadratic: 20 KB took 1.9 s)
    for unit in _units(content):
        if current and ((unit.starts_section or unit.starts_page) and text_words >= min_words // 2
                        or count + unit.words > max_words and count >= min_words // 2):
            groups.append(current)
            current, count, text_words = [], 0, 0
        current.append(unit)
        count += unit.words
        text_words += 0 if unit.starts_section else unit.words
    if current:
        # a short tail joins the passage before it when both fit, unless a heading starts it
        if groups and count < min_words // 2 and not current[0].starts_section and \
                sum(u.words for u in groups[-1]) + count <= max_words * 5 // 4:
            groups[-1].extend(current)
        else:
            groups.append(current)
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for order, group in enumerate(groups):
        text = _join(group)
        heading = group[0].heading
        passages.append(Passage(slug, _anchor(slug, heading, text, seen), heading, text, order,
                                sum(u.words for u in group), group[0].page, group[-1].page))
    return passages


def overlap(passage: Passage, previous: Passage | None) -> str:
    """The last sentence of the passage before, when it is in the same section: search sees it with this one
    (a little overlap, so an answer that straddles two passages is found in either)."""
    if previous is None or previous.heading != passage.heading or not previous.text:
        return ""
    return split_sentences(previous.text.split("\n\n")[-1])[-1].strip()


def passage_search_text(label: str, passage: Passage, previous: Passage | None = None) -> str:
    """What the embedding model sees of a passage: the topic's label and the heading path (so a passage is found
    by what it is about), the overlap with the passage before, then the text."""
    head = " › ".join((label, *passage.heading))
    before = overlap(passage, previous)
    return f"{head}\n{before + chr(10) if before else ''}{passage.text}"
