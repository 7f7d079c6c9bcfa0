"""The part of a topic's markdown a reader can see: what search, the model and the topic page work with.

The browser's sanitiser (components/r42_sanitize.js) drops HTML comments and the elements it strips with
their content (scripts, styles, templates, frames, SVG, ...). Text inside them is never shown to a learner,
so it must not reach the model or the index either: there it would be a hidden channel for instructions or
keyword stuffing. A document's page marks (`<!-- pagina 5 -->` on a line of their own) stay: they hide nothing,
and the passage splitter reads them and drops them. Code (fenced blocks and inline code spans) is shown as
written and kept as written.

Characters nobody sees (`visible_text`) go everywhere, code included: Unicode format characters (zero-width
ones, direction controls, the invisible operators), tag characters (which spell ASCII invisibly: "U+E0041" is a
hidden "A"), variation selectors and their supplement, private use, other default-ignorable characters (Hangul
fillers, the combining grapheme joiner) and control characters but tab and line breaks. They are removed, never
decoded: what the reader cannot see must not become text the model reads. Emoji stay whole: a zero-width joiner
between two emoji (woman + ZWJ + laptop is one picture), one VS15/VS16 after a symbol (a red heart, a keycap) and
the tags of the three subdivision flags (England, Scotland, Wales) are what a reader sees as one picture, and they
carry no hidden text (one selector is at most a bit; a run of them, the supplement and every other tag go);
likewise one joiner or non-joiner between two letters of Arabic or an Indic script, where it changes how the
letters join. Search and the markers (`core.text.fold`) drop even those.
"""

from __future__ import annotations

import functools
import re

# Characters a reader never sees (see the module docstring): every Unicode format character (category Cf; a unit
# test checks the running Python's table against this list), the other default-ignorable code points, private use,
# surrogates, and control characters but tab, line feed and carriage return.
_UNSEEN_RANGES = (
    (0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x34F, 0x34F), (0x600, 0x605),
    (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xD800, 0xDFFF), (0xE000, 0xF8FF), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF), (0xF0000, 0x10FFFF),
)
UNSEEN = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _UNSEEN_RANGES) + "]+")
# Symbols an emoji presentation selector (VS16) or text selector (VS15) may follow, and emoji a joiner may join.
_EMOJI = re.compile("[\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u25fe"
                    "\u2600-\u27bf\u2934\u2935\u2b05-\u2b55\u3030\u303d\u3297\u3299\U0001f000-\U0001faff]")
_KEYCAP = "0123456789#*"  # one of these, VS16 and U+20E3: a keycap
# The tags of the three subdivision flags (England, Scotland, Wales) after U+1F3F4, and the cancel tag.
_FLAG_TAGS = tuple("".join(chr(0xE0000 + ord(c)) for c in tag) + "\U000e007f" for tag in ("gbeng", "gbsct", "gbwls"))
# Letters and marks of Arabic, Syriac, Thaana, N'Ko and the Indic scripts (not their format characters), where a
# joiner or non-joiner between two letters changes how they are drawn.
_JOINING = re.compile("[\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u088f\u0892-\u08e1\u08e3-\u0dff]")


def _unseen(match: re.Match[str]) -> str:
    """What stays of a run of unseen characters: only the parts of an emoji, or a joiner in a joining script."""
    text, run = match.string, match.group(0)
    before = text[match.start() - 1] if match.start() else ""
    after = text[match.end()] if match.end() < len(text) else ""
    kept = ""
    if before == "\U0001f3f4":
        flag = next((tags for tags in _FLAG_TAGS if run.startswith(tags)), "")
        kept, run = flag, run[len(flag):]
    emoji = bool(kept) or bool(_EMOJI.match(before))
    keycap = bool(before) and before in _KEYCAP and after == "\u20e3"
    if run[:1] in ("\ufe0e", "\ufe0f") and not kept and (emoji or keycap):
        kept, run = run[0], run[1:]
    if run == "\u200d" and emoji and _EMOJI.match(after):
        kept += run
    elif run in ("\u200c", "\u200d") and not kept and _JOINING.match(before) and _JOINING.match(after):
        kept = run
    return kept


def visible_text(text: str) -> str:
    """`text` without the characters a reader cannot see (see the module docstring); emoji stay whole."""
    return UNSEEN.sub(_unseen, text) if UNSEEN.search(text) else text


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
# A tag starts with `<` and its name at once, as HTML reads it (`< script>` is text), and ends at the next `>`.
# `_elements` finds them in one pass: the pattern `<svg\b[^>]*>.*?(?:</svg\b[^>]*>|\Z)` read the rest of the text
# again from every `<svg ` (and every `</svg `) that no `>` followed, quadratic in such a run.
_HIDDEN_START = re.compile(_OPEN + rf"({_NAMES})\b", re.I)
_VOID_START = re.compile(_OPEN + r"(?:link|meta|base|embed)\b", re.I)  # void elements: no content, no end tag


_PAGE_MARK = re.compile(r"<!-- pagina \d{1,5} -->")  # core/documents.py page_mark: kept, a line of its own


def _comment(match: re.Match[str]) -> str:
    """A comment goes, but for a page mark on a line of its own (it hides no text: it says where a page starts)."""
    text, start, end = match.string, match.start(), match.end()
    if _PAGE_MARK.fullmatch(match.group(0)) and (start == 0 or text[start - 1] == "\n") and \
            (end == len(text) or text[end] == "\n"):
        return match.group(0)
    return " "


@functools.lru_cache(maxsize=64)
def _end_tag(name: str) -> re.Pattern[str]:
    return re.compile(rf"</{re.escape(name)}\b", re.I)


def _elements(text: str, start: re.Pattern[str], content: bool) -> str:
    """`text` with every element whose tag `start` finds replaced by a space: the tag up to its `>`, and with
    `content` what follows up to its end tag's `>` (or to the end of the text when no end tag ends)."""
    parts, at = [], 0
    while (tag := start.search(text, at)) is not None:
        end = text.find(">", tag.end())
        if end < 0:
            break  # no `>` after it: neither this tag nor any after it ends
        end += 1
        if content:
            close = _end_tag(tag.group(1)).search(text, end)
            close_end = text.find(">", close.end()) if close is not None else -1
            # the first end tag that a `>` follows: the first one, or none (no `>` after it is after any later one)
            end = close_end + 1 if close_end >= 0 else len(text)
        parts += [text[at:tag.start()], " "]
        at = end
    return "".join([*parts, text[at:]])


def _strip(text: str) -> str:
    # What is removed leaves a space, so its neighbours cannot join into a new tag (`<scr<script></script>ipt>`
    # leaves `<scr ipt>`, which is no script, as the browser, which parses once, never sees one either). The loop
    # is a second guard.
    while True:
        before = text
        text = _elements(_elements(_COMMENT.sub(_comment, text), _HIDDEN_START, True), _VOID_START, False)
        if text == before:
            return text


def visible_markdown(markdown: str) -> str:
    """`markdown` without unseen characters, and without HTML comments and hidden elements outside code (see the
    module docstring)."""
    markdown = visible_text(markdown)
    if "<" not in markdown:
        return markdown
    parts = _CODE.split(markdown)
    return "".join(part if i % 2 else _strip(part) for i, part in enumerate(parts))
