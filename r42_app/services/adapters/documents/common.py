"""What every parser of services/adapters/documents/ shares: cleaning text, titles, tables, refusals."""

from __future__ import annotations

import logging
import re

from r42_app.core.documents import KIND_LABELS, PAGE_MARK_RE, DocumentRefused

log = logging.getLogger(__name__)

MB = 1024 * 1024
_UTF8_BOM = b"\xef\xbb\xbf"
_WORD = re.compile(r"\w", re.UNICODE)
_NOT_A_TITLE = {"untitled", "naamloos", "zonder titel", "document", "title", "titel", "presentation",
                "powerpoint presentation", "presentatie van powerpoint", "powerpoint-presentatie", "slide 1",
                "dia 1", "word document", "microsoft word document", "new document", "nieuw document"}


def ran_out_of_memory(error: BaseException) -> bool:
    """Whether `error` came from a MemoryError: a parser that catches one and raises its own error (inside its
    except block, so Python keeps the MemoryError as the new error's context) still failed for memory."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, MemoryError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


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
