"""Text files (.txt, .md): readable text in a known encoding, a Markdown file's front matter."""

from __future__ import annotations

import re

from r42_app.core.documents import DocumentRefused, ParsedDocument
from r42_app.services.adapters.documents.common import _UTF8_BOM, _normalise_newlines, _tidy, _without_page_marks

_WESTERN_GUESSES = {"cp1250", "cp1252", "cp1254", "cp1257", "latin_1", "iso8859_2", "iso8859_3", "iso8859_4",
                    "iso8859_9", "iso8859_10", "iso8859_13", "iso8859_14", "iso8859_15", "iso8859_16", "mac_roman",
                    "mac_latin2", "mac_iceland", "mac_turkish", "cp850", "cp858", "cp437", "cp775"}
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")  # tab, newline, form feed and CR are text


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
