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

One module per format: text.py, html.py, docx.py, pptx.py and pdf.py (office.py checks an Office zip,
common.py holds what they share); this module picks the parser by what the file is.
"""

from __future__ import annotations

from collections.abc import Callable

from r42_app.core.documents import MAX_FILE_BYTES, DocumentRefused, ParsedDocument, kind_of
from r42_app.services.adapters.documents.common import _WORD, MB, _clean, escape_markup, log, ran_out_of_memory
from r42_app.services.adapters.documents.docx import _parse_docx
from r42_app.services.adapters.documents.html import _has_html_tag, _parse_html
from r42_app.services.adapters.documents.pdf import _parse_pdf
from r42_app.services.adapters.documents.pptx import _parse_pptx
from r42_app.services.adapters.documents.text import _parse_markdown, _parse_text

__all__ = ["parse_bytes", "escape_markup", "_has_html_tag"]  # (the parsers are looked up here: tests replace one)


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
        if ran_out_of_memory(e):
            raise DocumentRefused("memory", "out of memory while parsing", filename=filename) from None
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
