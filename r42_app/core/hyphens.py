"""Where a long Dutch word may break: soft hyphens (U+00AD) from the Dutch hyphenation patterns (pyphen, OpenTaal's
patterns), so that a phone's narrow card breaks "Beleggings-rendement" at a syllable with a hyphen, not
"Beleggingsrendemen|t" anywhere. The browser's own `hyphens: auto` needs a Dutch dictionary that Chromium on Linux
and Windows downloads on demand (and not at all offline), so the text carries its break points itself. A soft
hyphen is invisible unless the line breaks there; screen readers, search and copying ignore it."""

from __future__ import annotations

import functools
import re

import pyphen  # type: ignore[import-untyped]

SOFT_HYPHEN = "\u00ad"
MIN_WORD = 10  # shorter words fit a card's line as they are
_LONG_WORD = re.compile(rf"[^\W\d_]{{{MIN_WORD},}}")


@functools.lru_cache(maxsize=1)
def _dutch() -> pyphen.Pyphen:
    return pyphen.Pyphen(lang="nl_NL", left=3, right=3)  # never "Be-" or "-ng" alone on a line


@functools.lru_cache(maxsize=4096)
def hyphenated(text: str) -> str:
    """`text` with soft hyphens at the syllable breaks of its long words ("Waar\u00adde\u00adover\u00addracht")."""
    return _LONG_WORD.sub(lambda m: _dutch().inserted(m.group(0), hyphen=SOFT_HYPHEN), text)
