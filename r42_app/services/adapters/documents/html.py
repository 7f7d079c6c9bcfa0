"""HTML files: the main content as markdown (trafilatura, or a fallback of our own)."""

from __future__ import annotations

import re
from typing import Any

from r42_app.core.documents import ParsedDocument
from r42_app.core.passages import read_heading
from r42_app.services.adapters.documents.common import (
    _WORD,
    _markdown_table,
    _meaningful_title,
    _mismatch,
    _tidy,
    _without_page_marks,
    log,
)
from r42_app.services.adapters.documents.text import _decode_text

# The start of an HTML tag: its name, then its end or a space before its attributes (`_has_html_tag`). A pattern
# that read the attributes up to `>` read the rest of the text again from each `<p ` when no `>` came: quadratic.
_HTML_TAG = re.compile(
    r"<(?:!doctype\s+html|html|head|body|title|meta|div|p|h[1-6]|article|main|section|span|a|table|ul|ol|li|br"
    r"|header|footer|nav|strong|em|b|i|img|form|script|style)(?:/?>|\s)", re.IGNORECASE)


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
