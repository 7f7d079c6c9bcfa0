"""Every message R42 shows its users, keyed by a stable code, in Dutch (the source) and English.

The words live in gettext PO files (issue 52), one per language: `r42_app/locale/<lang>/LC_MESSAGES/r42.po`, each
message's code as its `msgctxt`, the Dutch text as its `msgid` and the language's text as its `msgstr`. A translator
uses ordinary PO tools; a language pack is one more file (docs/USER-GUIDE.md, "Een taal toevoegen").

Code speaks in codes (`msg("chat.failed")`, an exception's `code`); only the catalogue holds the words. An exception's
own text never reaches the UI: `tests/unit/test_messages.py` checks that every code used in the package is in the
catalogue, that every language has every code with the same fields, that the states show no raw exception text,
and that the Dutch texts PocketBase's hooks send (pb_hooks/) are the catalogue's.

`msg()` speaks the language of the moment: the person's (`set_language`, once the app knows who asks: a page's
event, an API request, a chat turn), else Dutch. Templates use `str.format` fields (`{seconds}`), and
`{n:relatie|relaties}` for a noun after a count; `msg()` refuses unknown codes loudly (KeyError) rather than showing
a code to a user.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Literal, get_args

from babel.messages.pofile import read_po
from babel.numbers import format_decimal

Language = Literal["nl", "en"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
DEFAULT_LANGUAGE: Language = "nl"
LANGUAGE_NAMES: dict[Language, str] = {"nl": "Nederlands", "en": "English"}  # each in its own language
LOCALES: dict[Language, str] = {"nl": "nl_NL", "en": "en_GB"}  # numbers and dates (Babel)
LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"
_BABEL_LOCALE: dict[str, str] = {str(k): v for k, v in LOCALES.items()}


def catalogue_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / "r42.po"


def _read_po(language: str):
    with open(catalogue_path(language), "rb") as f:
        return read_po(f, locale=_BABEL_LOCALE.get(language, language), domain="r42")


def read_catalogue(language: str) -> dict[str, str]:
    """One language's messages by code (its `msgctxt`), read from its PO file (Dutch: the msgid where no msgstr
    says otherwise). An untranslated message of another language is left out (msg() then says it in Dutch)."""
    out: dict[str, str] = {}
    for message in _read_po(language):
        if not message.context or not isinstance(message.id, str):
            continue
        text = message.string if isinstance(message.string, str) else ""
        if language == DEFAULT_LANGUAGE:
            text = text or message.id
        if text:
            out[message.context] = text
    return out


def read_ui_texts(language: str) -> dict[str, str]:
    """The pages' own words (labels, headings, buttons: the entries without a code, each its Dutch text as
    `msgid`; and the messages by code, for the pages that show one) in `language`, by their Dutch text; only the
    translated ones (the pages show the Dutch otherwise). Empty for Dutch: the pages are written in it."""
    if language == DEFAULT_LANGUAGE:
        return {}
    # a message by code that a page shows as it is built (components/i18n.py tm) is found by its Dutch text too
    return {m.id: m.string for m in _read_po(language)
            if isinstance(m.id, str) and m.id and isinstance(m.string, str) and m.string}


CATALOGUES: dict[str, dict[str, str]] = {lang: read_catalogue(lang) for lang in LANGUAGES}
CATALOGUE: dict[str, str] = CATALOGUES[DEFAULT_LANGUAGE]  # the Dutch source: every code there is
UI_TEXTS: dict[str, dict[str, str]] = {lang: read_ui_texts(lang) for lang in LANGUAGES}

_language: ContextVar[str] = ContextVar("r42_language", default=DEFAULT_LANGUAGE)


def language_of(value: object) -> Language | None:
    """"en", "EN", "en-GB", "nl_NL" -> the language; None for anything R42 does not speak."""
    if not isinstance(value, str):
        return None
    code = value.strip().lower().replace("_", "-").split("-")[0]
    return next((lang for lang in LANGUAGES if lang == code), None)


def set_language(language: str | None) -> None:
    """From now on in this task (a page event, a request, a chat turn), msg() speaks `language` (Dutch if unknown)."""
    _language.set(language_of(language) or DEFAULT_LANGUAGE)


def current_language() -> Language:
    return language_of(_language.get()) or DEFAULT_LANGUAGE


@contextmanager
def speaking(language: str | None) -> Iterator[None]:
    """msg() speaks `language` inside the block (a mail to another person, a background job)."""
    token = _language.set(language_of(language) or DEFAULT_LANGUAGE)
    try:
        yield
    finally:
        _language.reset(token)


def best_language(accept_language: str | None) -> Language | None:
    """The first language of an Accept-Language header that R42 speaks, by the header's weights; None if none."""
    ranked = []
    for i, part in enumerate((accept_language or "").split(",")[:20]):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if (lang := language_of(tag)) and weight > 0:
            ranked.append((-weight, i, lang))
    return sorted(ranked)[0][2] if ranked else None


class _Formatter(string.Formatter):
    """str.format, and one more spec: `{n:relatie|relaties}` is the singular when n is 1, else the plural."""

    def format_field(self, value: object, format_spec: str) -> str:
        if "|" in format_spec:
            one, _, many = format_spec.partition("|")
            return one if value == 1 else many
        return super().format_field(value, format_spec)


_FORMATTER = _Formatter()


def N_(text: str) -> str:  # noqa: N802  (gettext's name for it)
    """Marks a Dutch word or label for the catalogue where it is kept in a table before it is shown (a page shows
    it through components/i18n.py `t(label)`, Python code through `word(label)`)."""
    return text


def word(text: str, language: str | None = None) -> str:
    """A page word (marked with N_ or t() somewhere) in `language` (else the language of the moment): for labels a
    state computes in Python."""
    return UI_TEXTS.get(language_of(language) or current_language(), {}).get(text, text)


def translate(language: str | None, code: str, **fields: object) -> str:
    """The message for `code` in `language` (Dutch where it has none), its fields filled in."""
    template = CATALOGUES.get(language_of(language) or DEFAULT_LANGUAGE, CATALOGUE).get(code) or CATALOGUE[code]
    return _FORMATTER.format(template, **fields) if fields else template


def msg(code: str, **fields: object) -> str:
    """The message for `code` in the language of the moment, its fields filled in (a count's noun in its plural:
    `{n:relatie|relaties}`)."""
    return translate(_language.get(), code, **fields)


def plural(n: int, one: str, many: str) -> str:
    """"1 relatie", "2 relaties", "12.345 relaties": a count and its noun."""
    return f"{number(n)} {one if n == 1 else many}"


def number(n: int | float, language: str | None = None) -> str:
    """A number the way the reader writes it: 12.345 and 0,5 in Dutch, 12,345 and 0.5 in English (Babel)."""
    lang = language_of(language) or current_language()
    return format_decimal(n, locale=LOCALES[lang])


def amount(n: int | float, decimals: int = 2, language: str | None = None) -> str:
    """A number with a fixed count of decimals, the reader's way: 1.234,50 in Dutch, 1,234.50 in English (Babel)."""
    lang = language_of(language) or current_language()
    return format_decimal(n, format="#,##0" + ("." + "0" * decimals if decimals > 0 else ""), locale=LOCALES[lang],
                          decimal_quantization=True)


def nl_number(n: int) -> str:
    """A whole number the Dutch way (12.345)."""
    return number(n, "nl")
