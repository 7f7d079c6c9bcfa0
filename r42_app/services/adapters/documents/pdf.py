"""PDF files (pypdf): the text per page, paragraphs rejoined, headings from bookmarks or fonts."""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from r42_app.core.documents import MAX_PAGES, DocumentRefused, ParsedDocument, page_mark
from r42_app.services.adapters.documents.common import (
    _UTF8_BOM,
    _meaningful_title,
    _mismatch,
    _normalise_newlines,
    _without_page_marks,
    escape_markup,
    log,
    ran_out_of_memory,
)

_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)


def _check_pdf_header(data: bytes) -> None:
    head = data[:1024]
    at = head.find(b"%PDF-")
    if at < 0 or head[:at].replace(_UTF8_BOM, b"").strip(b" \t\r\n\x00\x0c"):
        raise _mismatch("pdf", "no %PDF- header")


def _parse_pdf(data: bytes) -> ParsedDocument:
    _check_pdf_header(data)
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception as e:  # an unsupported algorithm: as good as locked
                raise DocumentRefused("encrypted", f"decrypt: {e}") from None
            if opened == PasswordType.NOT_DECRYPTED:
                raise DocumentRefused("encrypted", "a user password")
        count = len(reader.pages)
    except DocumentRefused:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError, AssertionError) as e:
        if ran_out_of_memory(e):
            raise MemoryError from None
        raise DocumentRefused("corrupt", f"pdf: {type(e).__name__}: {e}"[:500]) from None
    if count > MAX_PAGES:
        raise DocumentRefused("too_many_pages", f"{count} pages", pages=count, maximum=MAX_PAGES)
    if count == 0:
        raise DocumentRefused("empty", "no pages")
    headings = _pdf_outline(reader, count)
    by_font = not headings  # the bookmarks win; without them, a heading is read from its font
    parts: list[str] = []
    letters = 0
    failed = 0
    texts: list[str] = []
    styles: list[dict[str, list[_LineStyle]]] = []
    for n, page in enumerate(reader.pages, start=1):
        fonts = _FontLines() if by_font else None
        try:
            raw = page.extract_text(visitor_text=fonts) or ""
        except MemoryError:
            raise
        except Exception as e:  # one broken page: its text is lost, the others are kept
            if ran_out_of_memory(e):
                raise MemoryError from None
            log.debug("pdf page %d", n, exc_info=True)
            raw, failed = "", failed + 1
        texts.append(_without_page_marks(_normalise_newlines(raw)))
        styles.append(fonts.lines() if fonts is not None else {})
    levels = _pdf_heading_levels(texts, styles) if by_font else [[] for _ in texts]
    pages = [_pdf_paragraphs(text, page_headings) for text, page_headings in zip(texts, levels, strict=True)]
    for n, paragraphs in enumerate(_without_running_lines(pages), start=1):
        letters += sum(len(_LETTER.findall(p)) for p in paragraphs)
        parts.append(page_mark(n))
        titles = headings.get(n, [])
        for level, title in titles:
            parts.append("#" * level + " " + escape_markup(title))
        if titles and paragraphs and _same_words(paragraphs[0], titles[0][1]):
            paragraphs = paragraphs[1:]  # the heading's line itself, already there as the heading
        parts.extend(escape_markup(p) for p in paragraphs)
    if failed == count:
        raise DocumentRefused("corrupt", "no page could be read")
    if letters == 0 or (count >= 3 and letters < 2 * count):
        raise DocumentRefused("no_text_layer", f"{letters} letters on {count} pages")
    title = ""
    try:
        meta = reader.metadata
        title = _meaningful_title(meta.title if meta is not None else "")
    except Exception:  # a broken info dictionary costs only the title
        log.debug("pdf metadata", exc_info=True)
    return ParsedDocument("pdf", title, "\n\n".join(parts), pages=count)


_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(r"[-–—(\[]?\s*(?:p\.|pag\.|pagina|page)?\s*#(?:\s*(?:/|van|of)\s*#)?\s*[-–—)\]]?")
RUNNING_SHARE = 0.5  # a line at the top or bottom of at least this share of the pages is a running header/footer
RUNNING_EDGE = 1  # lines looked at, at the top and at the bottom of each page
RUNNING_MAX = 60  # characters: a running header or footer is short


def _without_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages without their running headers and footers: a short line that stands first or last on at least
    half the pages (page numbers ignored: "Handboek 2026 – pagina 7 van 200" is the same line on every page), and
    a bare page number there. A document of fewer than 4 pages keeps everything."""
    if len(pages) < 4:
        return pages

    def key(line: str) -> str:
        folded = " ".join(line.casefold().split())
        # a heading read from its font is running only as it stands: "Hoofdstuk 1" to "Hoofdstuk 4", each first on
        # its page of a 4-page file, are four chapters
        return folded if line.startswith("#") else _DIGITS.sub("#", folded)

    seen: dict[str, int] = {}
    for paragraphs in pages:
        edge = {key(p) for p in paragraphs[:RUNNING_EDGE] + paragraphs[-RUNNING_EDGE:] if len(p) <= RUNNING_MAX}
        for k in edge:
            seen[k] = seen.get(k, 0) + 1
    running = {k for k, n in seen.items() if n >= RUNNING_SHARE * len(pages)}
    out = []
    for paragraphs in pages:
        keep = []
        for i, p in enumerate(paragraphs):
            at_edge = i < RUNNING_EDGE or i >= len(paragraphs) - RUNNING_EDGE
            if at_edge and len(p) <= RUNNING_MAX and (key(p) in running or _PAGE_NUMBER.fullmatch(key(p))):
                continue
            keep.append(p)
        out.append(keep)
    return out


def _same_words(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", s).casefold().split())

    return bool(norm(b)) and (norm(a) == norm(b) or re.sub(r"^[\d.\s]+", "", norm(a)) == norm(b))


def _pdf_outline(reader: Any, count: int) -> dict[int, list[tuple[int, str]]]:
    """The bookmarks as {page: [(heading level, title), ...]} (1-based pages, in outline order)."""
    found: dict[int, list[tuple[int, str]]] = {}
    seen = 0

    def walk(items: Iterable[Any], depth: int) -> None:
        nonlocal seen
        if depth > 10:
            return
        for item in items:
            if seen > 5_000:
                return
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            seen += 1
            title = " ".join(str(getattr(item, "title", "") or "").split())[:300]
            if not title:
                continue
            try:
                number = reader.get_destination_page_number(item)
            except Exception:  # a bookmark to nowhere
                continue
            if number is None or not 0 <= number < count:
                continue
            found.setdefault(number + 1, []).append((min(2 + depth, 6), title))

    try:
        walk(reader.outline, 0)
    except MemoryError:
        raise
    except Exception:  # a broken outline costs only the headings
        log.debug("pdf outline", exc_info=True)
    return found


_BULLET = re.compile(r"^\s*(?:[•●○◦▪■□–\-*·]|\d{1,3}[.)]|[a-z][.)])\s+")
_SENTENCE_END = re.compile(r"[.!?:;…\"”’)]$")
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
HEADING_RATIO = 1.15  # a heading's letters are at least this much larger than the body text's
HEADING_MAX = 80  # characters: a heading is a short line
BOLD_HEADING_MAX = 60  # characters, and BOLD_HEADING_WORDS words, for a heading only bold sets apart
BOLD_HEADING_WORDS = 10
HEADING_JOIN = 3  # lines of one heading (a title wrapped over lines)
_HEADING_TAIL = re.compile(r"[.,;:]$")  # a line that ends so is a sentence or a lead-in, not a heading
_LEADER = re.compile(r"\.\s?\.\s?\.\s?\.|…")  # dots leading to a page number: a line of a table of contents


@dataclass(frozen=True)
class _LineStyle:
    """How one extracted line of a PDF is printed: the smallest size of its letters in points, whether all of them
    are bold, and how many there are."""

    size: float
    bold: bool
    letters: int


class _FontLines:
    """pypdf's `visitor_text`: it sees every run of text `extract_text` puts out, with its font and size, and
    keeps the style of each line, by the line's text."""

    def __init__(self) -> None:
        self._runs: list[tuple[str, float, bool]] = []
        self._bold: dict[int, tuple[Any, bool]] = {}  # by the font dictionary's id (the font kept: its id stays its)

    def __call__(self, text: Any, cm: Any, tm: Any, font: Any, size: Any) -> None:
        if text:
            known = self._bold.get(id(font))
            if known is None:
                known = self._bold[id(font)] = (font, _is_bold(font))
            self._runs.append((str(text), _printed_size(size, cm, tm), known[1]))

    def lines(self) -> dict[str, list[_LineStyle]]:
        """{the line's text, spaces normalised: the styles of the lines of that text, in order}."""
        out: dict[str, list[_LineStyle]] = {}
        words: list[str] = []
        size, bold, letters = 0.0, True, 0
        for text, run_size, run_bold in self._runs:
            for k, piece in enumerate(text.split("\n")):
                if k:  # a line ends
                    line = " ".join("".join(words).split())
                    if line and letters:
                        out.setdefault(line, []).append(_LineStyle(size, bold, letters))
                    words, size, bold, letters = [], 0.0, True, 0
                found = len(_LETTER.findall(piece))
                if found:
                    size = min(size, run_size) if letters else run_size
                    bold, letters = bold and run_bold, letters + found
                words.append(piece)
        line = " ".join("".join(words).split())
        if line and letters:
            out.setdefault(line, []).append(_LineStyle(size, bold, letters))
        return out


def _printed_size(size: Any, cm: Any, tm: Any) -> float:
    """The size text is printed at: its font size scaled by the text and graphics matrices (a PDF may set a 1 pt
    font and scale it by 12)."""
    try:
        c = float(tm[2]) * float(cm[0]) + float(tm[3]) * float(cm[2])
        d = float(tm[2]) * float(cm[1]) + float(tm[3]) * float(cm[3])
        return round(abs(float(size)) * math.hypot(c, d), 2)
    except (TypeError, ValueError, IndexError):
        return 0.0


def _is_bold(font: Any) -> bool:
    try:
        name = str(font.get("/BaseFont", "")) if font is not None else ""
    except Exception:  # a font dictionary pypdf could not read: not bold as far as we know
        return False
    return bool(_BOLD_FONT.search(name.rsplit("+", 1)[-1]))


def _pdf_heading_levels(texts: list[str],
                        styles: list[dict[str, list[_LineStyle]]]) -> list[list[tuple[int, int]]]:
    """Per page, (heading level, kind) for each line of its text ((0, 0): not a heading), read from the fonts: a
    short line (at most HEADING_MAX characters, not ending in a full stop, comma, colon or semicolon, no dots
    leading to a page number) whose letters are all at least HEADING_RATIO times the size of the body text (the
    size most letters of the document have) is a heading: the largest size `##`, the next `###`, smaller ones
    `####`. A line only bold at the body's size is a heading one level below those when it is shorter still,
    follows the end of a sentence and has text after it. `kind` tells the sizes apart (lines of one kind in a row
    are one heading, wrapped). Conservative on purpose: a line taken for a heading when it is not cuts a paragraph
    in two."""
    sizes: Counter[float] = Counter()
    bold_at: Counter[float] = Counter()
    for page in styles:
        for found in page.values():
            for style in found:
                sizes[round(style.size * 2) / 2] += style.letters
                bold_at[round(style.size * 2) / 2] += style.letters if style.bold else 0
    body = sizes.most_common(1)[0][0] if sizes else 0.0
    if body <= 0:
        return [[] for _ in texts]
    body_is_bold = bold_at[body] * 2 > sizes[body]
    marked: list[list[float]] = []  # per line: its size when a heading by size, -1 when only by bold, 0 if not
    for text, page in zip(texts, styles, strict=True):
        seen: dict[str, int] = {}
        lines = [" ".join(line.split()) for line in text.split("\n")]
        marks: list[float] = []
        for k, line in enumerate(lines):
            of_text = page.get(line, [])
            n = seen[line] = seen.get(line, -1) + 1  # the nth line of this text is printed as its nth style
            marks.append(_heading_mark(lines, k, of_text[n] if n < len(of_text) else None, body, body_is_bold,
                                       marks))
        marked.append(marks)
    tops: list[float] = []  # the sizes of the heading levels, largest first (sizes within 6% are one level)
    for size in sorted({m for marks in marked for m in marks if m > 0}, reverse=True):
        if not tops or size < tops[-1] * 0.94:
            tops.append(size)

    def level(mark: float) -> tuple[int, int]:
        if mark == 0:
            return 0, 0
        if mark < 0:
            return 2 + min(len(tops), 3), -1  # below every level of a size
        tier = next(k for k, top in enumerate(tops) if mark >= top * 0.94)
        return 2 + min(tier, 2), tier + 1

    return [[level(m) for m in marks] for marks in marked]


def _heading_mark(lines: list[str], k: int, style: _LineStyle | None, body: float, body_is_bold: bool,
                  before: list[float]) -> float:
    """Line k's size when it reads as a heading by its size, -1 when only by being bold, else 0 (see
    _pdf_heading_levels); `before` holds the marks of the lines before it."""
    line = lines[k]
    if style is None or not 2 <= len(line) <= HEADING_MAX or _HEADING_TAIL.search(line) or \
            len(_LETTER.findall(line)) < 2 or _LEADER.search(line):
        return 0
    if style.size >= body * HEADING_RATIO:
        return style.size
    if not style.bold or body_is_bold or style.size < body * 0.95 or len(line) > BOLD_HEADING_MAX or \
            len(line.split()) > BOLD_HEADING_WORDS or _BULLET.match(line) or not (line[0].isupper() or
                                                                                line[0].isdigit()):
        return 0
    previous = next((j for j in range(k - 1, -1, -1) if lines[j]), None)
    after = any(lines[k + 1:])
    if not after or (previous is not None and not before[previous] and not _SENTENCE_END.search(lines[previous])):
        return 0  # nothing after it, or inside a paragraph: bold words, not a heading
    return -1


def _pdf_paragraphs(text: str, headings: list[tuple[int, int]] | None = None) -> list[str]:
    """A page's extracted lines as paragraphs: a line that ends mid-sentence goes on in the next one (a word
    hyphenated at the line's end is joined again), a short line or a line ending a sentence ends the paragraph,
    a blank line always does, and a bullet starts a new one. A line with a heading level (`headings`: (level,
    kind) per line, see _pdf_heading_levels) is a heading of its own; lines of one kind in a row are one heading,
    wrapped."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    headings = headings or []
    lengths = sorted(len(line) for line in lines if line)
    if not lengths:
        return []
    full = lengths[int(len(lengths) * 0.9) - 1 if len(lengths) >= 10 else -1]  # a full line's length
    paragraphs: list[str] = []
    current = ""
    joined = 0  # lines in the heading paragraphs[-1], when the line before was one
    for k, line in enumerate(lines):
        level, kind = headings[k] if k < len(headings) else (0, 0)
        if level and line:
            if current:
                paragraphs.append(current)
                current = ""
            if 0 < joined < HEADING_JOIN and headings[k - 1] == (level, kind):
                hyphenated = re.search(r"[^\W\d_]-$", paragraphs[-1][-2:]) and line[:1].islower()
                paragraphs[-1] = paragraphs[-1][:-1] + line if hyphenated else paragraphs[-1] + " " + line
                joined += 1
            else:
                paragraphs.append("#" * level + " " + line)
                joined = 1
            continue
        joined = 0
        if not line:
            if current:
                paragraphs.append(current)
                current = ""
            continue
        if current and _BULLET.match(line):
            paragraphs.append(current)
            current = ""
        if not current:
            current = line
        elif re.search(r"[^\W\d_]-$", current[-2:]) and line[:1].islower():  # its end only: `current` grows
            current = current[:-1] + line  # "voor-" + "beeld"
        else:
            current += " " + line
        nxt = next((x for x in lines[k + 1:k + 2]), "")
        short = len(line) < 0.7 * full
        ends = bool(_SENTENCE_END.search(line))
        if (short and (ends or not nxt or nxt[:1].isupper() or _BULLET.match(nxt))) or \
                (ends and len(line) < 0.9 * full):
            paragraphs.append(current)
            current = ""
    if current:
        paragraphs.append(current)
    return paragraphs
