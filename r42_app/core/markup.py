"""Raw HTML inside markdown, made harmless before the browser renders it.

Topic content and R42's answers are markdown, rendered with raw HTML allowed (tables, `<br>`, `<sub>`
in imported content). React never runs a string event handler, but it logs an error for one (React
#231 for `<img onerror=...>`), and a `<style>` or `<iframe>` in an answer that a prompt injection wrote
would restyle or embed things in the page. `defuse_html` drops what can act (event-handler attributes,
`javascript:` links, active elements) and leaves everything else, including code, exactly as written.
"""

from __future__ import annotations

import re

# Fenced code blocks and inline code spans are shown as text: they are never changed.
_CODE = re.compile(r"(```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`)", re.S)
_ACTIVE = r"script|style|iframe|frame|frameset|object|embed|applet|base|link|meta|form|template|noscript"
_ACTIVE_BLOCK = re.compile(rf"<\s*({_ACTIVE})\b[^>]*>.*?<\s*/\s*\1\s*>", re.S | re.I)
_ACTIVE_TAG = re.compile(rf"<\s*/?\s*(?:{_ACTIVE})\b[^>]*>", re.I)
_TAG = re.compile(r"""<([A-Za-z][\w:-]*)((?:"[^"]*"|'[^']*'|[^'"<>])*)>""")
_ATTR = re.compile(r"""([\s/]+)([^\s=/>]+)(?:(\s*=\s*)("[^"]*"|'[^']*'|[^\s>]+))?""")
_URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "srcset", "poster", "background"}
_SCRIPT_URL = re.compile(r"^\s*(?:javascript|vbscript|data)\s*:", re.I)


def _defuse_attr(match: re.Match) -> str:
    space, name, eq, value = match.groups()
    lowered = name.lower()
    if lowered.startswith("on"):
        return ""
    if value is not None and lowered in _URL_ATTRS and _SCRIPT_URL.match(value.strip("\"'")):
        return f'{space}{name}="#"'
    return match.group(0)


def _defuse_tag(match: re.Match) -> str:
    name, rest = match.groups()
    return f"<{name}{_ATTR.sub(_defuse_attr, rest)}>"


def _defuse_text(text: str) -> str:
    while True:  # removing a tag can join its neighbours into a new one (`<scr<script></script>ipt>`)
        before = text
        text = _ACTIVE_TAG.sub("", _ACTIVE_BLOCK.sub("", text))
        if text == before:
            return _TAG.sub(_defuse_tag, text)


def defuse_html(markdown: str) -> str:
    """The markdown with the raw HTML outside code made inert (see the module docstring)."""
    if "<" not in markdown:
        return markdown
    parts = _CODE.split(markdown)
    return "".join(part if i % 2 else _defuse_text(part) for i, part in enumerate(parts))
