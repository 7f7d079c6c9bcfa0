"""Soft hyphens in long Dutch words (core/hyphens.py, issue 49): a phone's card breaks a compound at a syllable."""

from r42_app.core.hyphens import SOFT_HYPHEN, hyphenated


def test_a_long_dutch_word_gets_break_points_at_its_syllables():
    out = hyphenated("Beleggingsrendement")
    assert out.replace(SOFT_HYPHEN, "") == "Beleggingsrendement"  # the same word to the eye, to search and to copy
    parts = out.split(SOFT_HYPHEN)
    assert len(parts) >= 3 and "Beleggings" in {"".join(parts[:i]) for i in range(1, len(parts))}
    assert all(len(p) >= 2 for p in parts) and len(parts[0]) >= 3 and len(parts[-1]) >= 3  # no "Be-", no "-t"


def test_short_words_and_codes_are_left_as_they_are():
    assert hyphenated("AOW en de Wtp") == "AOW en de Wtp"
    assert hyphenated("UPO versturen 2026") == "UPO versturen 2026"
    assert SOFT_HYPHEN in hyphenated("Arbeidsongeschiktheidspensioen (WIA)")
    assert hyphenated("Arbeidsongeschiktheidspensioen (WIA)").endswith("(WIA)")
