"""Word files (python-docx): the body in document order, headings, lists, emphasis and tables."""

from __future__ import annotations

import io
import re
from typing import Any

from r42_app.core.documents import ParsedDocument
from r42_app.services.adapters.documents.common import (
    _markdown_table,
    _meaningful_title,
    _tidy,
    _without_page_marks,
    log,
)
from r42_app.services.adapters.documents.office import _open_office_zip

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
