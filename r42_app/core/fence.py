"""Knowledge-base text as data in the prompt: every block fenced, every fence unforgeable.

Whatever the knowledge base holds (an admin's topic, an imported document, an MCP tool's answer) reaches the
model only inside a block that opens with the line `---SNIPPET START--- <header>` and closes with
`---SNIPPET END---` (a search snippet), or the same with `---KB TEXT START---` / `---KB TEXT END---`; the header, on the opening line itself, names the topic and says whether the text
carries injection markers (`suspect=true`). Inside a block, `defuse` turns anything that could pass for a
fence or a citation into plain text: any spelling of the delimiters (case, spacing, look-alike dashes,
full-width letters, invisible characters) and `[ref:N]`. So text can neither close its own block, nor open a block with a header
of its choosing (`suspect=false` becomes `suspect: false`), nor hand the model a citation number. One-line fields (labels,
descriptions) are also kept on one line, so they cannot start a line of their own.
"""

from __future__ import annotations

import re
from typing import Sequence

SNIPPET_START = "---SNIPPET START---"  # a search snippet, cited as its [ref:N]
SNIPPET_END = "---SNIPPET END---"
TEXT_START = "---KB TEXT START---"  # other knowledge-base text: the context block's content, a looked-up topic
TEXT_END = "---KB TEXT END---"

# Dashes and rules a forger might use instead of "-".
_RULE = r"[-\u2010-\u2015\u2212\u2500\u2501\ufe58\ufe63=_~*#.:|<>\[\]]"
_BLOCK = r"(?:(?:rag\s*)?snippets?|kb\s*[-_ ]?\s*text|kb|knowledge\s*base\s*(?:text|context))"
_DELIMITER = re.compile(rf"{_RULE}*\s*(?:{_BLOCK}\s*[-_ ]?\s*(?:start|end|begin|stop|einde)"
                        rf"|(?:start|end|begin)\s+of\s+(?:the\s+)?{_BLOCK})\s*{_RULE}*", re.I)
_REF = re.compile(r"\[\s*ref\s*:\s*(\d*)\s*\]?", re.I)
_REMOVED = "[scheidingsteken verwijderd]"
_HEADER_KEY = re.compile(r"\b(suspect|markers|topic|label)\s*=", re.I)
# Invisible characters go; full-width letters and signs ("ＳＮＩＰＰＥＴ") read as their ASCII selves.
_FOLD = {**dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad")),
         **{0xFF01 + i: 0x21 + i for i in range(94)}}


def defuse(text: str) -> str:
    """Text that cannot end, open or forge a block, nor cite: see the module docstring."""
    if not text:
        return ""
    folded = _REF.sub(r"(ref \1)", text.translate(_FOLD))
    return _HEADER_KEY.sub(r"\1: ", _DELIMITER.sub(_REMOVED, folded))


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
