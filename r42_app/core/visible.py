"""The part of a topic's markdown a reader can see: what search, the model and the topic page work with.

The browser's sanitiser (components/r42_sanitize.js) drops HTML comments and the elements it strips with
their content (scripts, styles, templates, frames, SVG, ...). Text inside them is never shown to a learner,
so it must not reach the model or the index either: there it would be a hidden channel for instructions or
keyword stuffing. A document's page marks (`<!-- pagina 5 -->` on a line of their own) stay: they hide nothing,
and the passage splitter reads them and drops them. Code (fenced blocks and inline code spans) is shown as
written and kept as written.
"""

from __future__ import annotations

import re

# Keep in step with STRIP in components/r42_sanitize.js.
HIDDEN_ELEMENTS = ("script", "style", "template", "iframe", "frame", "frameset", "object", "applet",
                   "noscript", "noembed", "noframes", "textarea", "title", "xmp", "plaintext", "svg", "math",
                   "select", "option", "datalist", "head")
_CODE = re.compile(r"(```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`)", re.S)
# `\<` is markdown's literal `<` (a document's plain text is escaped so: parsers in services/adapters): no tag
# starts there. `\\<` is a literal backslash and then a tag, which does start one.
_OPEN = r"(?<!(?<!\\)\\)<"
_COMMENT = re.compile(_OPEN + r"!--.*?(?:-->|\Z)", re.S)
_NAMES = "|".join(HIDDEN_ELEMENTS)
# An element with its content up to its end tag; without one, to the end (the browser reads on as its content).
# A tag starts with `<` and its name at once, as HTML reads it (`< script>` is text).
_HIDDEN = re.compile(_OPEN + rf"({_NAMES})\b[^>]*>.*?(?:</\1\b[^>]*>|\Z)", re.S | re.I)
_VOID = re.compile(_OPEN + r"(?:link|meta|base|embed)\b[^>]*>", re.I)  # void elements: no content, no end tag


_PAGE_MARK = re.compile(r"<!-- pagina \d{1,5} -->")  # core/documents.py page_mark: kept, a line of its own


def _comment(match: re.Match[str]) -> str:
    """A comment goes, but for a page mark on a line of its own (it hides no text: it says where a page starts)."""
    text, start, end = match.string, match.start(), match.end()
    if _PAGE_MARK.fullmatch(match.group(0)) and (start == 0 or text[start - 1] == "\n") and \
            (end == len(text) or text[end] == "\n"):
        return match.group(0)
    return " "


def _strip(text: str) -> str:
    # What is removed leaves a space, so its neighbours cannot join into a new tag (`<scr<script></script>ipt>`
    # leaves `<scr ipt>`, which is no script, as the browser, which parses once, never sees one either). The loop
    # is a second guard.
    while True:
        before = text
        text = _VOID.sub(" ", _HIDDEN.sub(" ", _COMMENT.sub(_comment, text)))
        if text == before:
            return text


def visible_markdown(markdown: str) -> str:
    """`markdown` without HTML comments and hidden elements outside code (see the module docstring)."""
    if "<" not in markdown:
        return markdown
    parts = _CODE.split(markdown)
    return "".join(part if i % 2 else _strip(part) for i, part in enumerate(parts))
