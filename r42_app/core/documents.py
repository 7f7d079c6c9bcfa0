"""Documents as knowledge: what a parsed file looks like, and how it becomes topics.

A parser (services/adapters/documents/, run in a sandbox process) turns a file into a `ParsedDocument`: its
title and its text as markdown with the structure kept (headings, paragraphs, lists, tables as markdown tables,
slide titles) and, for a PDF, a page mark (`<!-- pagina 5 -->`, see `page_mark`) before the text of every page.
The browser never shows a page mark (the sanitiser drops HTML comments); the passage splitter reads it, so every
passage knows the page it stands on and a citation can say "handboek, p. 5".

`plan_document` turns a parsed document into topics: one topic when the text fits in one (MAX_CONTENT), else a
topic for the document plus a topic per section (its top-level headings; a PDF without headings by pages), each
linked `part_of` the document topic. Slugs come from the file name and the section titles, so importing a changed
file updates its topics in place and only a changed section's topic is written again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from r42_app.core.errors import UserError
from r42_app.core.kb import MAX_CONTENT, MAX_DESCRIPTION, MAX_LABEL, MAX_SLUG, TOPIC_TYPES, Relation, Topic, slugify
from r42_app.core.messages import msg
from r42_app.core.passages import read_heading

KINDS: tuple[str, ...] = ("pdf", "docx", "pptx", "md", "html", "txt")
EXTENSIONS: dict[str, str] = {
    ".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".md": "md", ".markdown": "md",
    ".html": "html", ".htm": "html", ".txt": "txt",
}
KIND_LABELS = {"pdf": "PDF", "docx": "Word", "pptx": "PowerPoint", "md": "Markdown", "html": "HTML", "txt": "tekst"}
MAX_FILE_BYTES = 50 * 1024 * 1024  # per file: a 500-page handbook with pictures fits
MAX_PAGES = 500  # PDF pages or slides per file
MAX_FILES = 50  # per upload or API request
MAX_UPLOAD_BYTES = 250 * 1024 * 1024  # the files of one upload together (upload_limit.py takes 260 MB with the form)
SECTION_BUDGET = MAX_CONTENT - 1_000  # a section topic's content, leaving room for its page mark and edits
MAX_SECTIONS = 180  # section topics per document: with their relations, a document is one batch (kb_store.BATCH_SIZE)
DOWNLOAD_LINK_S = 3600  # a signed link to an original file works this long
MAX_MARKDOWN = MAX_SECTIONS * SECTION_BUDGET + MAX_CONTENT  # more text than this cannot become a document's topics

PAGE_MARK_RE = re.compile(r"^<!-- pagina (\d{1,5}) -->$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_PAGE_SUFFIX = re.compile(r"(?<!\s)\s*+\(p\. \d+(?:–\d+)?\)$")  # from a run of spaces' start: read once
# An image, and a link, as in core/text.py link_texts: one pass, a `[` without its `](…)` taken and left as written.
_IMAGE = re.compile(r"!\[[^\]]*+(\](?:\([^)]*+(\))?)?)?")
_LINK = re.compile(r"\[([^\]]*+)(\](?:\([^)]*+(\))?)?)?")


def page_mark(page: int) -> str:
    """The line that starts page `page` (1-based) in a document's markdown."""
    return f"<!-- pagina {page} -->"


def kind_of(filename: str) -> str | None:
    """The kind a file name claims (by extension), or None for a file we do not read."""
    name = filename.lower()
    dot = name.rfind(".")
    return EXTENSIONS.get(name[dot:]) if dot >= 0 else None


class DocumentRefused(UserError):
    """A file that is not imported: `kind` (its code is doc.<kind>) says why in Dutch, `filename` names it.
    `str()` is the English detail for logs."""

    code_prefix = "doc."

    def __init__(self, kind: str, detail: str = "", *, filename: str = "", **fields: object):
        super().__init__(self.code_prefix + kind, detail or kind, filename=filename, **fields)
        self.kind = kind
        self.filename = filename


@dataclass(frozen=True)
class ParsedDocument:
    """A file's text as markdown (see the module docstring). `pages` counts a PDF's pages or a deck's slides."""

    kind: str
    title: str
    markdown: str
    pages: int = 0


@dataclass(frozen=True)
class Section:
    title: str
    text: str  # markdown, starting with the page mark of the page it starts on (PDF)
    first_page: int = 0
    last_page: int = 0
    by_pages: bool = False  # a part of a text without headings, titled by its pages


@dataclass
class DocumentPlan:
    """The topics a document becomes: `root` (the document) and its `sections` (none when it fits in one)."""

    key: str  # the document's stable key within the tenant: the slug of its file name
    filename: str
    kind: str
    root: Topic
    sections: list[Topic] = field(default_factory=list)
    pages: int = 0

    @property
    def topics(self) -> list[Topic]:
        return [self.root, *self.sections]

    @property
    def relations(self) -> list[Relation]:
        return [Relation(s.slug, self.root.slug, "part_of") for s in self.sections]


def document_key(filename: str) -> str:
    """The slug of a file name without its extension ("Handboek 2026.pdf" → "handboek-2026")."""
    stem = filename.replace("\\", "/").rsplit("/", 1)[-1]
    dot = stem.rfind(".")
    if dot > 0:
        stem = stem[:dot]
    return slugify(stem) or "document"


def _pretty_stem(filename: str) -> str:
    stem = filename.replace("\\", "/").rsplit("/", 1)[-1]
    dot = stem.rfind(".")
    stem = stem[:dot] if dot > 0 else stem
    stem = re.sub(r"[_]+", " ", stem).strip()
    return stem[:1].upper() + stem[1:] if stem else "Document"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


def _plain(line: str) -> str:
    """A markdown line as plain words (no marks, no table pipes, no links' targets)."""
    line = _IMAGE.sub(lambda m: "" if m.group(2) else m.group(0), line)
    line = _LINK.sub(lambda m: m.group(1) if m.group(3) else m.group(0), line)
    line = re.sub(r"^\s{0,3}(#{1,6}|[-*+]|\d{1,9}[.)]|>)\s+", "", line)
    line = re.sub(r"[*_`|]+", " ", line)
    return " ".join(line.split())


def first_heading(markdown: str) -> str:
    for kind, text in _lines(markdown):
        if kind == "heading":
            return text
    return ""


def _lines(markdown: str) -> Iterable[tuple[str, str]]:
    """(kind, text) per line: heading (its title), page (its number), text, code (inside a fence)."""
    fence = ""
    for line in markdown.split("\n"):
        f = _FENCE.match(line)
        if fence:
            if f and f.group(1) == fence:
                fence = ""
            yield "code", line
            continue
        if f:
            fence = f.group(1)
            yield "code", line
            continue
        m = PAGE_MARK_RE.match(line.strip())
        if m:
            yield "page", m.group(1)
            continue
        h = read_heading(line)  # no pattern: see core/passages.py (a heading of many spaces was quadratic)
        if h:
            yield "heading", _plain(h[1])
            continue
        yield "text", line


def _words(text: str) -> str:
    """Text as its words only (case, punctuation and spacing aside): what two titles are compared by."""
    return " ".join(re.sub(r"[^\w\s]", " ", text).casefold().split())


def summary_sentence(markdown: str, limit: int = 300, skip: Iterable[str] = ()) -> str:
    """The first sentence(s) of the text, as a topic description: from the first paragraph that reads as text
    (a full stop, or ten words or more), else the first paragraph of four words or more. A paragraph that only
    repeats one of the titles in `skip` is never the description (a PDF's title line is a paragraph of its own:
    as a description the topic page showed its label twice)."""
    titles = {w for w in (_words(t) for t in skip) if w}
    fallback = ""
    for kind, text in _lines(markdown):
        if kind != "text":
            continue
        plain = _plain(text)
        if len(plain.split()) < 4 or set(plain) <= set("-:| ") or _words(plain) in titles:
            continue
        m = re.search(r"^(.{20,}?[.!?])(\s|$)", plain)
        if m:
            return _clip(m.group(1), limit)
        if len(plain.split()) >= 10 or plain[-1] in ".!?…":
            return _clip(plain, limit)
        fallback = fallback or _clip(plain, limit)  # a title-like line: a sentence further on is a better summary
    return fallback


def _has_text(markdown: str) -> bool:
    return any(kind != "page" and text.strip() for kind, text in _lines(markdown))


def without_title(markdown: str, label: str, alone: bool = True) -> str:
    """The text without its first heading (or line) when that is the topic's label and nothing but page marks
    comes before it (a Word file's Title paragraph, a Markdown file's `# Titel`, a PDF's title line): the topic
    page shows the label above the content already. The text as it is otherwise; when nothing would be left, the
    title stays if `alone` (a topic of only its title), else nothing does (the text before a first chapter)."""
    lines = markdown.split("\n")
    for k, (kind, text) in enumerate(_lines(markdown)):
        if kind == "page" or (kind == "text" and not text.strip()):
            continue
        if kind not in ("heading", "text") or not _words(text) or _words(_plain(text)) != _words(label):
            return markdown
        if kind == "text" and k + 1 < len(lines) and lines[k + 1].strip():
            return markdown  # the first line of a longer paragraph: its sentence goes on
        end = k + 1
        while end < len(lines) and not lines[end].strip():
            end += 1  # the blank lines after the heading go with it
        rest = "\n".join(lines[:k] + lines[end:]).strip()
        return rest if _has_text(rest) else markdown if alone else ""
    return markdown


def _heading_level(line: str) -> int:
    h = read_heading(line)
    return h[0] if h else 0


def split_sections(markdown: str) -> tuple[str, list[Section]]:
    """(preamble, sections): the text cut at its top-level headings (the shallowest level that occurs more than
    once), each section small enough for one topic; a text without headings is cut by pages, then by blocks."""
    markdown = "\n".join(wrap_long_lines(markdown.split("\n")))
    lines = markdown.split("\n")
    kinds = list(_lines(markdown))
    levels = [_heading_level(lines[k]) if kind == "heading" else 0 for k, (kind, _) in enumerate(kinds)]
    level = next((lv for lv in range(1, 7) if levels.count(lv) > 1), 0)
    if level == 0 and any(levels):
        level = min(lv for lv in levels if lv)
    starts = [k for k, lv in enumerate(levels) if lv and lv <= level] if level else []
    if len(starts) > 1 and levels[starts[0]] < level and levels.count(levels[starts[0]]) == 1:
        starts = starts[1:]  # one heading above the sections, first: the document's title, in the preamble
    page_at = _pages_at(kinds)
    preamble_end = starts[0] if starts else len(lines)
    preamble = "\n".join(lines[:preamble_end]).strip()
    if all(kind == "page" or not text.strip() for kind, text in kinds[:preamble_end]):
        preamble = ""  # only the page mark before the first chapter: nothing to say on the document's topic
    raw: list[tuple[str, int, int]] = []  # (title, start line, end line)
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        raw.append((kinds[start][1] or f"Deel {n + 1}", start, end))
    if not raw:
        # no headings: the whole text is cut into parts, by pages where it has them
        preamble = ""
        raw = [("", 0, len(lines))]
    elif preamble and len(preamble) > SECTION_BUDGET // 2:
        # a long text before the first chapter is a section of its own (in parts when it must), not the document's
        raw.insert(0, ("Inleiding", 0, preamble_end))
        preamble = ""
    sections: list[Section] = []
    for title, start, end in raw:
        for piece_start, piece_end in _fit(lines, kinds, start, end):
            first, last = page_at[piece_start], _last_page(page_at, kinds, piece_start, piece_end)
            body = "\n".join(lines[piece_start:piece_end]).strip()
            if not any(kind != "page" and text.strip() for kind, text in kinds[piece_start:piece_end]):
                continue  # only page marks or blank lines: no topic
            if first and not PAGE_MARK_RE.match(lines[piece_start].strip()):
                body = page_mark(first) + "\n" + body
            sections.append(Section(title, body, first, last))
    return preamble, _titled(sections)


LINE_MAX = 4_000  # characters: a longer line is cut (between sentences, else words) so every section can be cut


def wrap_long_lines(lines: Sequence[str]) -> list[str]:
    """The lines with every line over LINE_MAX characters cut into paragraphs of at most LINE_MAX: between
    sentences where it can, else between words, else anywhere. Nothing is lost: the pieces together are the line.
    (A Word file whose paragraphs are joined by soft line breaks, or a text file of one line, is one line.)"""
    out: list[str] = []
    for line in lines:
        if len(line) <= LINE_MAX:
            out.append(line)
            continue
        pieces: list[str] = []
        current = ""
        for part in re.split(r"(?<=[.!?…])\s+", line):
            while len(part) > LINE_MAX:  # one sentence longer than a paragraph may be: between words
                cut = part.rfind(" ", 0, LINE_MAX)
                cut = cut if cut > LINE_MAX // 2 else LINE_MAX
                head, part = part[:cut], part[cut:].lstrip()
                if current:
                    pieces.append(current)
                    current = ""
                pieces.append(head)
            if current and len(current) + 1 + len(part) > LINE_MAX:
                pieces.append(current)
                current = ""
            current = f"{current} {part}" if current else part
        if current:
            pieces.append(current)
        for k, piece in enumerate(pieces):
            if k:
                out.append("")
            out.append(piece)
    return out


def _pages_at(kinds: Sequence[tuple[str, str]]) -> list[int]:
    """The page each line stands on (0 where the text has no page marks)."""
    out: list[int] = []
    page = 0
    for kind, text in kinds:
        if kind == "page":
            page = int(text)
        out.append(page)
    return out + [page]


def _last_page(page_at: Sequence[int], kinds: Sequence[tuple[str, str]], start: int, end: int) -> int:
    """The last page with text in lines [start, end)."""
    for k in range(end - 1, start - 1, -1):
        if kinds[k][0] != "page" and kinds[k][1].strip():
            return page_at[k]
    return page_at[start]


def _fit(lines: Sequence[str], kinds: Sequence[tuple[str, str]], start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut into pieces of at most SECTION_BUDGET characters: at page marks where there are any,
    else at blank lines outside code, else at any line (a single line longer than that is cut by the topic limit
    upstream: parsers wrap their lines)."""
    size = sum(len(lines[k]) + 1 for k in range(start, end))
    if size <= SECTION_BUDGET:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    piece_start, used, last_cut, last_page_cut = start, 0, -1, -1
    k = start
    while k < end:
        cost = len(lines[k]) + 1
        if kinds[k][0] == "page" and k > piece_start:
            last_page_cut = k
        elif not lines[k].strip() and kinds[k][0] != "code" and k > piece_start:
            last_cut = k
        if used + cost > SECTION_BUDGET and k > piece_start:
            cut = last_page_cut if last_page_cut > piece_start and (last_page_cut - piece_start) > 0 and \
                sum(len(lines[j]) + 1 for j in range(piece_start, last_page_cut)) > SECTION_BUDGET // 3 else last_cut
            if cut <= piece_start:
                cut = k
            pieces.append((piece_start, cut))
            piece_start, used, last_cut, last_page_cut = cut, 0, -1, -1
            k = cut
            continue
        used += cost
        k += 1
    if piece_start < end:
        pieces.append((piece_start, end))
    return pieces


def _titled(sections: list[Section]) -> list[Section]:
    """Untitled parts get their pages as title; a title cut into parts gets "(deel N)"."""
    counts: dict[str, int] = {}
    for s in sections:
        counts[s.title] = counts.get(s.title, 0) + 1
    seen: dict[str, int] = {}
    out: list[Section] = []
    for s in sections:
        title, by_pages = s.title, False
        if not title:
            title, by_pages = (_pages_title(s.first_page, s.last_page), True) if s.first_page else \
                (f"Deel {len(out) + 1}", False)
        elif counts[s.title] > 1:
            seen[s.title] = seen.get(s.title, 0) + 1
            title = f"{s.title} (deel {seen[s.title]})"
        out.append(Section(title, s.text, s.first_page, s.last_page, by_pages))
    return out


def pages_ref(first: int, last: int = 0) -> str:
    """A passage's or a part's pages as the reader sees them: "p. 5", "p. 5–6" across two pages, "" without pages.
    One wording for the source chip, the page label on the topic page and a part's label."""
    if not first:
        return ""
    return f"p. {first}" if not last or last <= first else f"p. {first}–{last}"


def _pages_title(first: int, last: int) -> str:
    return f"Pagina {first}" if first == last else f"Pagina's {first}–{last}"


def _unique(value: str, taken: set[str], limit: int, sep: str = "-") -> str:
    base, k = value, 1
    while value in taken:
        k += 1
        suffix = f"{sep}{k}"
        value = base[: limit - len(suffix)].rstrip("-") + suffix
    taken.add(value)
    return value


def plan_document(parsed: ParsedDocument, filename: str, topic_type: str = "concept",
                  root_slug: str | None = None, taken_slugs: Iterable[str] = ()) -> DocumentPlan:
    """The topics `parsed` becomes. `root_slug` is the document topic's slug when the document was imported before
    (its key otherwise); `taken_slugs` are slugs of the tenant's other topics, which the plan avoids."""
    if topic_type not in TOPIC_TYPES:
        raise ValueError(f"unknown topic type {topic_type!r}")
    key = document_key(filename)
    taken = set(taken_slugs)
    root = root_slug or _unique(key, taken, MAX_SLUG)
    taken.add(root)
    title = _clip(parsed.title or first_heading(parsed.markdown) or _pretty_stem(filename), MAX_LABEL)
    label_taken = {title.casefold()}
    markdown = parsed.markdown.strip()
    heading = first_heading(markdown)
    described = summary_sentence(markdown, MAX_DESCRIPTION, (title, heading)) or f"Uit het bestand {filename}."
    if len(markdown) <= MAX_CONTENT:
        return DocumentPlan(key, filename, parsed.kind,
                            Topic(root, title, topic_type, described, without_title(markdown, title)),
                            pages=parsed.pages)
    preamble, sections = split_sections(markdown)
    if len(sections) > MAX_SECTIONS:
        raise DocumentRefused("too_many_sections", f"{len(sections)} sections", filename=filename,
                              maximum=MAX_SECTIONS)
    if not parsed.title and heading and any(s.title == heading or s.title.startswith(heading + " (deel ")
                                            for s in sections):
        # the first heading is a chapter's, not the document's: the document is named by its file
        title = _clip(_pretty_stem(filename), MAX_LABEL)
        label_taken = {title.casefold()}
    preamble = without_title(preamble, title, alone=False)  # the title above the first chapter: the label
    topics: list[Topic] = []
    contents: list[str] = []
    for s in sections:
        part = f"p-{s.first_page}-{s.last_page}" if s.by_pages else (slugify(s.title) or "deel")
        slug = _unique(_clip_slug(f"{root}-{part}"), taken, MAX_SLUG)
        pages = f" ({pages_ref(s.first_page, s.last_page)})" if s.first_page else ""
        label = _unique_label(_clip(f"{title}{pages}" if s.by_pages else f"{title}: {s.title}", MAX_LABEL),
                              label_taken)
        description = summary_sentence(s.text, MAX_DESCRIPTION, (title, s.title, label)) or \
            _clip(f"{s.title}{pages}, uit {filename}.", MAX_DESCRIPTION)
        assert len(s.text) <= MAX_CONTENT, (s.title, len(s.text))  # _fit cut it; lines are at most LINE_MAX
        topics.append(Topic(slug, label, topic_type, description, s.text))
        contents.append(f"- [{_link_text(_clip(s.title, 100))}{'' if s.by_pages else pages}](/topics/{slug})")
    overview = (preamble + "\n\n" if preamble else "") + "## Inhoud\n\n" + "\n".join(contents)
    if len(overview) > MAX_CONTENT:
        overview = (preamble[: MAX_CONTENT // 2].rsplit("\n", 1)[0] + "\n\n" if preamble else "") + "## Inhoud\n\n"
        for n, line in enumerate(contents):
            rest = "\n" + msg("doc.more_chapters", count=len(contents) - n)
            if len(overview) + len(line) + 1 + len(rest) > MAX_CONTENT:
                overview += rest.strip()  # the others are linked as relations ("bestaat onder meer uit")
                break
            overview += line + "\n"
        overview = overview.rstrip()
    return DocumentPlan(key, filename, parsed.kind, Topic(root, title, topic_type, described, overview), topics,
                        pages=parsed.pages)


def _clip_slug(slug: str) -> str:
    return slug[:MAX_SLUG].strip("-")


def _unique_label(label: str, taken: set[str]) -> str:
    value, k = label, 1
    while value.casefold() in taken:
        k += 1
        suffix = f" ({k})"
        value = label[: MAX_LABEL - len(suffix)] + suffix
    taken.add(value.casefold())
    return value


def _link_text(text: str) -> str:
    return re.sub(r"([\[\]\\])", r"\\\1", text)


def chip_label(label: str, first_page: int, last_page: int = 0) -> str:
    """A citation's label for a passage of a PDF: the topic's label without its page range, then the page
    ("Handboek, p. 5"; "Handboek, p. 5–6" for a passage across two pages)."""
    if not first_page:
        return label
    return f"{_PAGE_SUFFIX.sub('', label)}, {pages_ref(first_page, last_page)}"


def download_signature(secret: str, tenant_id: str, document_id: str, expires: int) -> str:
    """The signature of a link to a document's original file: valid for one tenant's document until `expires`
    (a Unix time). The topic page hands signed links to the signed-in users of the tenant; the API checks them."""
    import hashlib
    import hmac

    message = f"{tenant_id}\x1f{document_id}\x1f{expires}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def download_url(secret: str, tenant_id: str, document_id: str, expires: int) -> str:
    sig = download_signature(secret, tenant_id, document_id, expires)
    return f"/api/kb/documents/{document_id}/file?tenant={tenant_id}&expires={expires}&sig={sig}"


def upload_name(raw: str | None) -> str:
    """An uploaded file's name without any folder part or control characters, at most 255 characters."""
    name = (raw or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip() or "bestand"
    if len(name) > 255:
        dot = name.rfind(".")
        ext = name[dot:] if 0 < dot and len(name) - dot <= 10 else ""
        name = name[: 255 - len(ext)] + ext
    return name


def rejection(item: object) -> tuple[str, frozenset[str]]:
    """One file a drop zone turned away, as its page sends it ({"name": …, "codes": react-dropzone's error codes}):
    its name ("" when it has none) and codes. Anything else is a file without a name or codes."""
    item = item if isinstance(item, dict) else {}
    raw = item.get("name")
    name = upload_name(raw) if isinstance(raw, str) and raw.strip() else ""
    codes = item.get("codes")
    return name, frozenset(str(c)[:40] for c in codes[:10]) if isinstance(codes, list) else frozenset()


def name_key(filename: str) -> str:
    """What makes two file names the same document's: the name, case and Unicode normal form aside."""
    import unicodedata

    return unicodedata.normalize("NFC", filename).casefold()
