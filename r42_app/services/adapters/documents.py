"""Files to markdown: `parse_bytes(filename, data)` reads a PDF, Word, PowerPoint, HTML, Markdown or text file
into a `ParsedDocument` (core/documents.py), or refuses it with a `DocumentRefused` that names the file.

The content is checked, not the name: a ".pdf" that is a PNG is refused as a mismatch before any parser sees it,
and an Office file is checked for a zip bomb from its central directory before it is opened. What each parser
keeps:

- PDF (pypdf): the text of every page after that page's mark (`<!-- pagina N -->`, every page, even an empty
  one), lines rejoined into paragraphs (a word hyphenated at the end of a line is joined again), and the PDF's
  bookmarks as headings (`##` top level, `###` below) right after the mark of the page they point to. A PDF
  without bookmarks gets its headings from its fonts: a short line printed clearly larger than the body text
  (`##` the largest size, `###` the next, `####` smaller ones), or only bold between paragraphs.
- Word (python-docx): the body in document order, headings (Heading N / Kop N / Title; with a Title paragraph,
  Heading 1 is `##`, so the title stays above the chapters), list items as `- ` (indented by level), bold and
  italic, tables as markdown tables. No headers, footers, comments or pictures.
- PowerPoint (python-pptx): per slide a `## ` heading (its title, else "Dia N"), the text of its other shapes
  (bullets by level), its tables, then its notes as a paragraph "Notities: ...".
- HTML (trafilatura): the main content as markdown, without navigation, header, footer or scripts.
- Markdown: as it is, without a YAML front matter block (whose `title:` becomes the title).
- Text: as it is.

The parsers run on untrusted files; services/adapters/parse_sandbox.py runs this module in a child process with
a time and memory limit. The heavy libraries are imported by the parser that needs them, so the child only loads
what its file needs.
"""

from __future__ import annotations

import io
import logging
import math
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from r42_app.core.documents import (
    KIND_LABELS,
    MAX_FILE_BYTES,
    MAX_PAGES,
    PAGE_MARK_RE,
    DocumentRefused,
    ParsedDocument,
    kind_of,
    page_mark,
)
from r42_app.core.passages import read_heading

log = logging.getLogger(__name__)

MB = 1024 * 1024
MAX_UNZIPPED_MB = 200  # an Office file's entries together, as their central directory declares them
MAX_ZIP_ENTRIES = 5_000
MAX_RATIO = 200  # compression ratio of one entry, counted only for entries over RATIO_MIN_BYTES
RATIO_MIN_BYTES = 10 * MB
OFFICE_PARTS = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml"}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a legacy .doc/.ppt, or an Office file with a password
_UTF8_BOM = b"\xef\xbb\xbf"
_WESTERN_GUESSES = {"cp1250", "cp1252", "cp1254", "cp1257", "latin_1", "iso8859_2", "iso8859_3", "iso8859_4",
                    "iso8859_9", "iso8859_10", "iso8859_13", "iso8859_14", "iso8859_15", "iso8859_16", "mac_roman",
                    "mac_latin2", "mac_iceland", "mac_turkish", "cp850", "cp858", "cp437", "cp775"}
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")  # tab, newline, form feed and CR are text
# The start of an HTML tag: its name, then its end or a space before its attributes (`_has_html_tag`). A pattern
# that read the attributes up to `>` read the rest of the text again from each `<p ` when no `>` came: quadratic.
_HTML_TAG = re.compile(
    r"<(?:!doctype\s+html|html|head|body|title|meta|div|p|h[1-6]|article|main|section|span|a|table|ul|ol|li|br"
    r"|header|footer|nav|strong|em|b|i|img|form|script|style)(?:/?>|\s)", re.IGNORECASE)
_WORD = re.compile(r"\w", re.UNICODE)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_NOT_A_TITLE = {"untitled", "naamloos", "zonder titel", "document", "title", "titel", "presentation",
                "powerpoint presentation", "presentatie van powerpoint", "powerpoint-presentatie", "slide 1",
                "dia 1", "word document", "microsoft word document", "new document", "nieuw document"}


def parse_bytes(filename: str, data: bytes) -> ParsedDocument:
    """`data`, the content of the file `filename`, as markdown. Raises DocumentRefused (its filename set) for a
    file that is not read: too large, empty, of a kind we do not read, not what its name says, broken, locked,
    a zip bomb, without text. No other exception leaves this function."""
    try:
        return _parse(filename, data)
    except DocumentRefused as refused:
        if refused.filename == filename:
            raise
        fields = {k: v for k, v in refused.fields.items() if k != "filename"}
        raise DocumentRefused(refused.kind, str(refused), filename=filename, **fields) from None
    except MemoryError:
        raise DocumentRefused("memory", "out of memory while parsing", filename=filename) from None
    except RecursionError:
        log.debug("parsing %s: recursion too deep", filename, exc_info=True)
        raise DocumentRefused("corrupt", "nesting too deep", filename=filename) from None
    except Exception as e:  # a parser's own error on a malformed file: pypdf, lxml, zipfile, ... raise anything
        log.debug("parsing %s failed", filename, exc_info=True)
        raise DocumentRefused("corrupt", f"{type(e).__name__}: {e}"[:500], filename=filename) from None


def _parse(filename: str, data: bytes) -> ParsedDocument:
    if len(data) > MAX_FILE_BYTES:
        raise DocumentRefused("too_large", f"{len(data)} bytes", size=round(len(data) / MB, 1),
                              maximum=MAX_FILE_BYTES // MB)
    kind = kind_of(filename)
    if kind is None:
        raise DocumentRefused("unsupported", f"extension of {filename!r}")
    if not data:
        raise DocumentRefused("empty", "no bytes")
    parsers: dict[str, Callable[[bytes], ParsedDocument]] = {
        "pdf": _parse_pdf, "docx": _parse_docx, "pptx": _parse_pptx, "html": _parse_html, "md": _parse_markdown,
        "txt": _parse_text,
    }
    doc = parsers[kind](data)
    if kind in ("docx", "pptx", "txt"):  # plain text (the PDF parser escapes its pages itself, around its marks)
        doc = ParsedDocument(doc.kind, doc.title, escape_markup(doc.markdown), doc.pages)
    if kind != "pdf" and not _WORD.search(doc.markdown):  # a PDF without words has no text layer (its parser)
        raise DocumentRefused("empty", "no words")
    return ParsedDocument(doc.kind, _clean(doc.title), _clean(doc.markdown), doc.pages)


def escape_markup(text: str) -> str:
    """Plain text as markdown that shows it as written: a `<` is escaped, so text that reads like a tag or a
    comment ("zet dit in <title>", "<!-- pagina 377 -->") is shown and indexed as the text it is, never parsed as
    HTML that the browser and the index would drop with the rest of the topic after it."""
    return text.replace("<", "\\<")


def _clean(text: str) -> str:
    """No NUL characters and no lone surrogates (a PDF's broken font map makes both): text that JSON, UTF-8 and
    PocketBase take as it is."""
    text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _mismatch(kind: str, detail: str) -> DocumentRefused:
    return DocumentRefused("mismatch", detail, expected=KIND_LABELS[kind])


def _meaningful_title(title: object, filename_stem: str = "") -> str:
    """A document property title when it says something: not empty, not "Untitled", not the name of the file,
    not what Word fills in ("Microsoft Word - verslag.docx")."""
    if not isinstance(title, str):
        return ""
    title = " ".join(title.split())
    folded = title.casefold()
    if len(title) < 2 or folded in _NOT_A_TITLE or folded.startswith(("microsoft word -", "microsoft powerpoint -")):
        return ""
    if re.fullmatch(r"[\w .-]+\.(pdf|docx?|pptx?|txt|md|html?|rtf|odt|indd|tex|dvi|ps)", folded):
        return ""  # a file name
    if filename_stem and folded == filename_stem.casefold():
        return ""
    return title[:300]


def _without_page_marks(text: str) -> str:
    """Lines that look like our page marks are the file's own text, not pages: they are dropped."""
    if "<!-- pagina" not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not PAGE_MARK_RE.match(line.strip()))


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _tidy(markdown: str) -> str:
    """No trailing spaces, at most one blank line in a row, no blank lines at either end."""
    lines = [line.rstrip() for line in markdown.split("\n")]
    out: list[str] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip("\n")


# -- text: md, txt and html must be readable text -----------------------------------------------------------


def _decode_text(data: bytes) -> str:
    """The bytes as text: UTF-8 (with or without BOM), else charset-normalizer's guess when it is confident;
    no NUL bytes, hardly any control characters. Raises not_text otherwise."""
    text: str | None = None
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        if b"\x00" in data[:4096] and not utf16:
            raise DocumentRefused("not_text", "NUL bytes") from None
        lenient = data.decode("utf-8", "replace")
        bad = lenient.count("\ufffd") - data.count("\ufffd".encode())
        if not utf16 and bad <= 3 + len(lenient) // 10_000 and _UTF8_MULTIBYTE.search(data):
            text = lenient  # UTF-8 with a stray bad byte (a file cut mid-character, one pasted Latin-1 letter)
        else:
            from charset_normalizer import from_bytes

            best = from_bytes(data).best()
            if best is None or best.chaos > 0.1:
                raise DocumentRefused("not_text", "no confident encoding") from None
            text = str(best)
            if best.encoding in _WESTERN_GUESSES:
                # between the Latin code pages a guess cannot tell "crème" from "crčme": our users write Dutch,
                # English, French, German, and Windows-1252 is what their old files are in
                try:
                    text = data.decode("cp1252")
                except UnicodeDecodeError:
                    pass
    if "\x00" in text:
        raise DocumentRefused("not_text", "NUL characters")
    if text and len(_CONTROL.findall(text)) > max(8, len(text) // 100):
        raise DocumentRefused("not_text", "control characters")
    return _normalise_newlines(text)


def _parse_text(data: bytes) -> ParsedDocument:
    text = _without_page_marks(_decode_text(data))
    return ParsedDocument("txt", "", _tidy(text))


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


def _parse_markdown(data: bytes) -> ParsedDocument:
    text = _decode_text(data)
    title = ""
    m = _FRONT_MATTER.match(text)
    if m:
        block = m.group(1) or ""
        # the line's rest, stripped below (a lazy title before `[ \t]*$` read the spaces after it again from each
        # of its characters: quadratic)
        t = re.search(r"^title[ \t]*+:(.+)$", block, re.MULTILINE | re.IGNORECASE)
        if t:
            title = t.group(1).strip()
            if len(title) >= 2 and title[0] == title[-1] and title[0] in "\"'":
                title = title[1:-1].strip()
        text = text[m.end():]
    return ParsedDocument("md", title[:300], _tidy(_without_page_marks(text)))


# -- HTML -------------------------------------------------------------------------------------------------


def _has_html_tag(text: str) -> bool:
    """Whether `text` holds a tag of HTML: a known name, ended at once (`<p>`, `<br/>`) or by a `>` after its
    attributes. One pass: a tag with attributes is whole when a `>` comes anywhere after its name."""
    last_end = text.rfind(">")
    return any(m.group(0).endswith(">") or m.end() <= last_end for m in _HTML_TAG.finditer(text, 0, last_end + 1))


def _parse_html(data: bytes) -> ParsedDocument:
    html = _decode_text(data)
    if not _has_html_tag(html[:1_000_000]):
        raise _mismatch("html", "no HTML tags")
    import trafilatura

    markdown = trafilatura.extract(
        html, output_format="markdown", include_tables=True, include_formatting=True, include_links=False,
        include_images=False, include_comments=False, favor_precision=True) or ""
    if not _WORD.search(markdown):
        markdown = _html_fallback(html)
    title = ""
    try:
        meta = trafilatura.extract_metadata(html)
        title = _meaningful_title(getattr(meta, "title", "") or "")
    except Exception:  # metadata is a nicety: a page it cannot read still has its text
        log.debug("html metadata", exc_info=True)
    if not title:
        title = next((h[1] for line in markdown.split("\n") if (h := read_heading(line)) and h[1]), "")
    return ParsedDocument("html", title, _tidy(_without_page_marks(markdown)))


_DROP_TAGS = ("nav", "header", "footer", "aside", "script", "style", "form", "noscript", "template", "svg",
              "iframe", "button", "select")
_BLOCK_TAGS = {"p", "div", "section", "article", "main", "blockquote", "pre", "figure", "figcaption", "dl", "dt",
               "dd", "address", "details", "summary"}


def _html_fallback(html: str) -> str:
    """The text of <main>, <article> or <body> without navigation, header, footer, asides, scripts and forms:
    for a page trafilatura finds no main content in (a short page, a page that is all table)."""
    import lxml.html  # type: ignore[import-untyped]  # lxml ships no types (lxml-stubs is not pinned)
    from lxml import etree

    try:
        root = lxml.html.document_fromstring(html)
    except Exception:  # lxml refuses some inputs outright (e.g. only a comment)
        log.debug("html fallback parse", exc_info=True)
        return ""
    for el in list(root.iter(*_DROP_TAGS)):
        if el.getparent() is not None:
            el.drop_tree()
    for el in list(root.iter(etree.Comment, etree.ProcessingInstruction)):
        if el.getparent() is not None:
            el.drop_tree()
    container = next((el for el in (root.find(".//main"), root.find(".//article"), root.find(".//body"))
                      if el is not None), root)
    blocks: list[str] = []
    _html_blocks(container, blocks)
    return "\n\n".join(b for b in blocks if b.strip())


def _html_text(el: Any) -> str:
    return " ".join(el.text_content().split())


def _html_blocks(el: Any, out: list[str], depth: int = 0) -> None:
    if depth > 200:
        return
    tag = el.tag if isinstance(el.tag, str) else ""
    if re.fullmatch(r"h[1-6]", tag):
        text = _html_text(el)
        if text:
            out.append("#" * int(tag[1]) + " " + text)
        return
    if tag in ("ul", "ol"):
        items = [_html_text(li) for li in el if getattr(li, "tag", "") == "li"]
        out.append("\n".join(f"- {t}" for t in items if t))
        return
    if tag == "table":
        rows = [[_html_text(c) for c in tr if getattr(c, "tag", "") in ("td", "th")] for tr in el.iter("tr")]
        out.append(_markdown_table(rows))
        return
    children = [c for c in el if isinstance(c.tag, str)]
    has_blocks = any(c.tag in _BLOCK_TAGS or c.tag in ("ul", "ol", "table") or re.fullmatch(r"h[1-6]", c.tag)
                     for c in children)
    if not has_blocks:
        text = _html_text(el)
        if text:
            out.append(text)
        return
    if el.text and el.text.strip():
        out.append(" ".join(el.text.split()))
    for child in children:
        _html_blocks(child, out, depth + 1)
        if child.tail and child.tail.strip():
            out.append(" ".join(child.tail.split()))


# -- tables -----------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|")


def _markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a markdown table, the first row its header; cells flattened to one line."""
    rows = [[_cell(c) for c in row] for row in rows]
    rows = [row for row in rows if any(row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join([" --- "] * width) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


# -- Office files: zip checks -----------------------------------------------------------------------------


def _open_office_zip(kind: str, data: bytes) -> zipfile.ZipFile:
    """The zip of a .docx/.pptx, after checking that it is one (of the right kind) and no zip bomb."""
    if data.startswith(_OLE_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in data[:2 * MB] or b"EncryptedPackage" in data[:2 * MB]:
            raise DocumentRefused("encrypted", "OLE container with an EncryptedPackage")
        raise _mismatch(kind, "a legacy binary Office file (.doc/.ppt)")
    if not data.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")):
        raise _mismatch(kind, "not a zip")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError) as e:
        raise DocumentRefused("corrupt", f"zip: {e}") from None
    if len(infos) > MAX_ZIP_ENTRIES:
        raise DocumentRefused("zip_bomb", f"{len(infos)} entries", maximum=MAX_UNZIPPED_MB)
    total = sum(i.file_size for i in infos)
    if total > MAX_UNZIPPED_MB * MB:
        raise DocumentRefused("zip_bomb", f"{total} bytes unzipped", maximum=MAX_UNZIPPED_MB)
    for i in infos:
        if i.file_size > RATIO_MIN_BYTES and i.file_size > MAX_RATIO * max(i.compress_size, 1):
            raise DocumentRefused("zip_bomb", f"{i.filename}: ratio {i.file_size / max(i.compress_size, 1):.0f}",
                                  maximum=MAX_UNZIPPED_MB)
    names = {i.filename for i in infos}
    if "[Content_Types].xml" not in names or OFFICE_PARTS[kind] not in names:
        raise _mismatch(kind, f"zip without [Content_Types].xml or {OFFICE_PARTS[kind]}")
    return zf


# -- Word -------------------------------------------------------------------------------------------------


_HEADING_STYLE = re.compile(r"^(?:heading|kop)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLE = {"title", "titel"}
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def _parse_docx(data: bytes) -> ParsedDocument:
    _open_office_zip("docx", data).close()
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    # a Title paragraph is the level above Heading 1: with one, every heading goes a level down (Title `#`,
    # Heading 1 `##`), so the title is not taken for one more chapter and the chapters keep their own level
    below_title = int(any(_style_name(p).strip().casefold() in _TITLE_STYLE for p in document.paragraphs))
    blocks: list[str] = []
    list_run = False  # the previous block was a list item: items of one list stay together
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            blocks.append(_markdown_table(_docx_rows(item)))
            list_run = False
        elif isinstance(item, Paragraph):
            line, is_item = _docx_paragraph(item, below_title)
            if not line:
                continue
            if is_item and list_run:
                blocks[-1] += "\n" + line
            else:
                blocks.append(line)
            list_run = is_item
    title = _meaningful_title(_core_title(document))
    return ParsedDocument("docx", title, _tidy(_without_page_marks("\n\n".join(b for b in blocks if b))))


def _core_title(document: Any) -> str:
    try:
        return document.core_properties.title or ""
    except Exception:  # a broken docProps/core.xml costs only the title
        log.debug("core properties", exc_info=True)
        return ""


def _style_name(paragraph: Any) -> str:
    try:
        style = paragraph.style
        return (style.name or "") if style is not None else ""
    except Exception:  # a style id that points nowhere
        return ""


def _docx_paragraph(paragraph: Any, shift: int = 0) -> tuple[str, bool]:
    """(markdown line, is a list item) for one Word paragraph; a heading `shift` levels below its style's number
    (a Title is always `#`)."""
    style = _style_name(paragraph)
    plain = _docx_plain(paragraph._p)
    if not plain.strip():
        return "", False
    heading = _HEADING_STYLE.match(style.strip())
    if heading or style.strip().casefold() in _TITLE_STYLE:
        level = int(heading.group(1)) + shift if heading else 1
        return "#" * min(level, 6) + " " + " ".join(plain.split()), False
    ppr = paragraph._p.pPr
    numpr = ppr.numPr if ppr is not None else None
    is_item = numpr is not None or "list" in style.casefold() or "lijst" in style.casefold()
    text = _docx_formatted(paragraph, plain)
    if is_item:
        level = 0
        if numpr is not None and numpr.ilvl is not None and numpr.ilvl.val is not None:
            level = int(numpr.ilvl.val)
        else:
            m = re.search(r"(\d)\s*$", style)
            level = int(m.group(1)) - 1 if m else 0
        return "  " * max(0, min(level, 8)) + "- " + " ".join(text.split()), True
    return text, False


def _docx_plain(p: Any) -> str:
    """All the text of a paragraph element (runs, hyperlinks, fields, content controls, insertions), tabs and
    breaks as spaces; the fallback copy of a text box (mc:Fallback) is left out."""
    parts: list[str] = []
    for el in p.iter(f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr"):
        if any(a.tag == _MC_FALLBACK for a in el.iterancestors()):
            continue
        parts.append((el.text or "") if el.tag == f"{_W}t" else " ")
    return "".join(parts)


def _docx_formatted(paragraph: Any, plain: str) -> str:
    """The paragraph's runs with bold as **...** and italic as _..._; its plain text where runs miss some of it
    (text in content controls or tracked insertions)."""
    from docx.text.run import Run

    pieces: list[tuple[str, bool, bool]] = []
    for inner in paragraph.iter_inner_content():
        if isinstance(inner, Run):
            pieces.append((inner.text, bool(inner.bold), bool(inner.italic)))
        else:  # a hyperlink: its text, unformatted
            pieces.append((getattr(inner, "text", "") or "", False, False))
    joined = "".join(p[0] for p in pieces)
    if " ".join(joined.split()) != " ".join(plain.split()):
        return " ".join(plain.split())
    if not any(b or i for _, b, i in pieces):
        return joined
    merged: list[list[Any]] = []
    for text, bold, italic in pieces:
        if merged and merged[-1][1] == bold and merged[-1][2] == italic:
            merged[-1][0] += text
        else:
            merged.append([text, bold, italic])
    out = []
    for text, bold, italic in merged:
        core = text.strip()
        if not core or not (bold or italic):
            out.append(text)
            continue
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()):]
        mark = ("**" if bold else "") + ("_" if italic else "")
        out.append(f"{lead}{mark}{core}{mark[::-1]}{trail}")
    return "".join(out)


def _docx_rows(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # a merged cell comes once per grid column it spans: its text once
            cells.append("" if cell._tc is previous else "\n".join(_docx_plain(p) for p in cell._tc.iter(f"{_W}p")
                                                                   if p.getparent() is cell._tc))
            previous = cell._tc
        rows.append(cells)
    return rows


# -- PowerPoint -------------------------------------------------------------------------------------------


def _parse_pptx(data: bytes) -> ParsedDocument:
    _open_office_zip("pptx", data).close()
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    slides = list(deck.slides)
    if len(slides) > MAX_PAGES:
        raise DocumentRefused("too_many_pages", f"{len(slides)} slides", pages=len(slides), maximum=MAX_PAGES)
    parts: list[str] = []
    first_title = ""
    words = False
    for n, slide in enumerate(slides, start=1):
        title_shape = _slide_title_shape(slide)
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        if n == 1:
            first_title = title
        parts.append(f"## {title or f'Dia {n}'}")
        blocks: list[str] = []
        for shape in _slide_shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            blocks.extend(_pptx_shape_blocks(shape))
        notes = _slide_notes(slide)
        if notes:
            blocks.append("Notities: " + notes)
        words = words or bool(title) or any(_WORD.search(b) for b in blocks)
        parts.extend(b for b in blocks if b.strip())
    if not words:
        raise DocumentRefused("empty", "no text on any slide")
    title = _meaningful_title(_core_title(deck)) or first_title
    return ParsedDocument("pptx", title, _tidy(_without_page_marks("\n\n".join(parts))), pages=len(slides))


def _slide_title_shape(slide: Any) -> Any:
    try:
        shape = slide.shapes.title
    except Exception:  # a placeholder without a type
        return None
    return shape if shape is not None and shape.has_text_frame and shape.text_frame.text.strip() else None


def _slide_shapes(shapes: Iterable[Any], depth: int = 0) -> Iterator[Any]:
    """The shapes of a slide, those inside groups included, in the slide's order."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape) and depth < 20:
            yield from _slide_shapes(shape.shapes, depth + 1)
        else:
            yield shape


_BULLET_PLACEHOLDERS = {"BODY", "OBJECT"}


def _pptx_shape_blocks(shape: Any) -> list[str]:
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        return [_markdown_table(rows)]
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    bulleted = False
    if shape.is_placeholder:
        try:
            bulleted = shape.placeholder_format.type.name in _BULLET_PLACEHOLDERS
        except Exception:  # a placeholder whose type python-pptx does not know
            bulleted = False
    blocks: list[str] = []
    items: list[str] = []
    for paragraph in shape.text_frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if not text:
            continue
        level = paragraph.level
        ppr = paragraph._p.pPr
        explicit = None
        if ppr is not None:
            tags = {child.tag.rsplit("}", 1)[-1] for child in ppr}
            explicit = False if "buNone" in tags else True if tags & {"buChar", "buAutoNum"} else None
        if explicit is True or (explicit is None and (bulleted or level > 0)):
            items.append("  " * min(level, 8) + "- " + text)
        else:
            if items:
                blocks.append("\n".join(items))
                items = []
            blocks.append(text)
    if items:
        blocks.append("\n".join(items))
    return blocks


def _slide_notes(slide: Any) -> str:
    try:
        if not slide.has_notes_slide:
            return ""
        frame = slide.notes_slide.notes_text_frame
        return " ".join(frame.text.split()) if frame is not None else ""
    except Exception:  # notes are a nicety
        log.debug("slide notes", exc_info=True)
        return ""


# -- PDF --------------------------------------------------------------------------------------------------


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
        except Exception:  # one broken page: its text is lost, the others are kept
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
