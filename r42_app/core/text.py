"""Tokenising for Dutch (and English) learning content: folded, numbers kept, no stemmer.

Dutch glues words together (`pensioen` + `regeling` = `pensioenregeling`); instead of a
stemmer, retrieval matches such compounds through the fallback in `r42_app.core.lexical`.
"""

from __future__ import annotations

import re
import unicodedata

from r42_app.core.visible import UNSEEN

_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
WORD_RE = _WORD  # a word, hyphenated parts included

# Function words that carry no topic: dropped from the lexical index and from queries.
STOP_WORDS = frozenset(
    """
    de het een en of maar dat die dit deze van in op aan te met voor door bij naar om uit over als dan
    is zijn was waren wordt worden werd ben bent heb hebt heeft hebben had kan kun kunnen mag moet moeten
    zal zullen wil wat wie waar wanneer hoe welke waarom er niet geen ook nog al wel zo je jij jou jouw u uw
    ik mij me mijn we wij ons onze zij ze hun hen hij hem zijn haar zich men dus toch nu hier daar
    the a an and or but of in on at to for with by from as is are was were be been being it its this that
    these those what who which how when where why do does did can could should would will shall may might
    must i you he she we they me my your our their not no yes so if than then there here about into
    """.split()
)


# The combining diacritical marks (all of U+0300-U+036F but the grapheme joiner, which combines with nothing):
# removed in one pass; any other combining character is left to the slow path.
_DIACRITICS = re.compile("[\u0300-\u034e\u0350-\u036f]+")


def nl_sort_key(text: str) -> tuple[str, str]:
    """How a Dutch reader sorts names: without regard to case or accents ("Aanmelding" before "AOW", "Één" with
    the E's), then as written (a stable order for names that fold alike)."""
    return fold(text), text


def fold(text: str) -> str:
    """Lowercase, strip diacritics and invisible characters (every one `core.visible` names, emoji joiners
    included): `Beëindiging` -> `beeindiging`."""
    if text.isascii():
        return text.casefold()
    decomposed = _DIACRITICS.sub("", unicodedata.normalize("NFKD", UNSEEN.sub("", text).casefold()))
    if decomposed.isascii():
        return decomposed
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Folded words in order, hyphenated words split into their parts (no stop-word removal)."""
    return [part for match in _WORD.findall(fold(text)) for part in match.split("-")]


def tokenize(text: str) -> list[str]:
    """Index/query terms: folded words without stop words; a hyphenated word also yields its
    joined form, so `premie-inning` is found by `premieinning` and by `premie` or `inning`."""
    out: list[str] = []
    for match in _WORD.findall(fold(text)):
        parts = match.split("-")
        out.extend(p for p in parts if p not in STOP_WORDS)
        if len(parts) > 1:
            out.append("".join(parts))
    return out


def token_groups(text: str) -> list[set[str]]:
    """`tokenize`'s terms by the word they come from (a hyphenated word's parts and its joined form are one
    word: "AOW-leeftijd" is {aow, leeftijd, aowleeftijd}); words that are all stop words left out."""
    groups: list[set[str]] = []
    for match in _WORD.findall(fold(text)):
        group = set(tokenize(match))
        if group and group not in groups:
            groups.append(group)
    return groups


# A markdown link `[text](target)` in one pass: a `[` whose `](…)` does not follow is taken up to its `]` (or to the
# end, with no `]` or `)` left to find) and left as written, so no bracket is read again from each `[` before it
# (`\[([^\]]+)\]\([^)]*\)` was: quadratic in a run of `[`). The same links, the same text, as that pattern.
_LINK = re.compile(r"\[([^\]]++)(\](?:\([^)]*+(\))?)?)?")


def link_texts(text: str) -> str:
    """`text` with every markdown link `[text](target)` as its text."""
    return _LINK.sub(lambda m: m.group(1) if m.group(3) else m.group(0), text)


def clip(text: str, limit: int) -> str:
    """`text` on one line in at most `limit` characters: cut at a word where one is near, ending in "…"."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "…"
