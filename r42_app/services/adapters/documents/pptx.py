"""PowerPoint files (python-pptx): a heading per slide, its text, tables and notes."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from r42_app.core.documents import MAX_PAGES, DocumentRefused, ParsedDocument
from r42_app.services.adapters.documents.common import (
    _WORD,
    _markdown_table,
    _meaningful_title,
    _tidy,
    _without_page_marks,
    log,
)
from r42_app.services.adapters.documents.docx import _core_title
from r42_app.services.adapters.documents.office import _open_office_zip


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
