"""Issue 52: the catalogue is gettext PO files (r42_app/locale/<lang>/LC_MESSAGES/r42.po), Dutch the source and
English complete: every code in both with the same fields and plural shapes, none that nobody uses, and msg()
speaking the language of the moment. Pure files and Babel: no app."""

import ast
import re
import string
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from r42_app.core.messages import (
    CATALOGUES,
    LANGUAGES,
    amount,
    best_language,
    catalogue_path,
    current_language,
    language_of,
    msg,
    number,
    plural,
    speaking,
    translate,
)
from tests.unit.test_messages import SOURCES, codes_used, parsed, user_error_classes

PLURAL = re.compile(r"\{(\w+):[^{}|]*\|[^{}]*\}")


def fields(template: str) -> set[str]:
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_language_has_every_code_with_the_same_fields_and_plurals():
    dutch = CATALOGUES["nl"]
    assert len(dutch) > 300
    for lang in LANGUAGES:
        other = CATALOGUES[lang]
        assert sorted(set(dutch) - set(other)) == [], f"{lang}: codes without a translation"
        assert sorted(set(other) - set(dutch)) == [], f"{lang}: codes the Dutch source does not have"
        for code, text in other.items():
            assert fields(text) == fields(dutch[code]), f"{lang} {code}: {text!r} names other fields"
            assert PLURAL.findall(text) == PLURAL.findall(dutch[code]), f"{lang} {code}: plural fields differ"
            assert text.count("[ref:") == dutch[code].count("[ref:"), f"{lang} {code}"
    assert sum(CATALOGUES["en"][c] == dutch[c] for c in dutch) <= 3  # English, not Dutch copied over


def test_the_po_files_are_plain_gettext_that_po_tools_read():
    for lang in LANGUAGES:
        with open(catalogue_path(lang), "rb") as f:
            catalog = read_po(f)
        assert str(catalog.locale) == lang
        coded = [m for m in catalog if m.id and m.context]
        assert len(coded) == len(CATALOGUES[lang]), f"{lang}: a message by code that does not read"
        assert not [m.context for m in catalog if m.fuzzy and m.id], f"{lang}: fuzzy entries are not used"


def strings_of(tree: ast.Module) -> tuple[set[str], list[re.Pattern]]:
    """The package's string literals, and its f-strings as patterns (`f"lti.{what}_invalid"` -> lti\\..+_invalid)."""
    literals, patterns = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            literals.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values]
            if any(isinstance(v, ast.Constant) and "." in str(v.value) for v in node.values):
                patterns.append(re.compile("".join(parts)))
    return literals, patterns


def test_no_catalogue_entry_is_unused():
    """A code is used when the package names it: whole, as a kind its error class prefixes ("capability_denied" for
    ChatRefused's chat.), or through an f-string (f"lti.{what}_invalid")."""
    trees = {path: parsed(path) for path in SOURCES}
    classes = user_error_classes(list(trees.values()))
    used = {code for path, tree in trees.items() for _, code in codes_used(path, tree, classes)}
    literals, patterns = set(), []
    for tree in trees.values():
        found, shapes = strings_of(tree)
        literals |= found
        patterns += shapes
    prefixes = {prefix for prefix in classes.values() if prefix}

    def named(code: str) -> bool:
        kind = next((code[len(p):] for p in prefixes if code.startswith(p)), None)
        return (code in used or code in literals or (kind is not None and kind in literals)
                or any(p.fullmatch(code) for p in patterns))

    unused = [code for code in CATALOGUES["nl"] if not named(code)]
    assert unused == [], "catalogue entries nobody uses (remove them from both PO files):\n" + "\n".join(unused)


def test_msg_speaks_the_language_of_the_moment_and_falls_back_to_dutch():
    assert current_language() == "nl"
    assert msg("chat.failed").startswith("Er ging iets mis")
    with speaking("en"):
        assert current_language() == "en"
        assert msg("chat.failed").startswith("Something went wrong")
        assert msg("chat.too_long", length=9000, maximum=8000).startswith("Your message is 9000 characters")
        with speaking("de"):  # a language R42 does not speak: Dutch
            assert msg("chat.failed").startswith("Er ging iets mis")
    assert msg("chat.failed").startswith("Er ging iets mis")  # the block ended: back to Dutch
    assert translate("en", "chat.hello_name", name="Ann") == "Hi Ann!"
    with pytest.raises(KeyError):
        translate("en", "chat.no_such_code")


def test_an_import_says_one_person_and_two_people_in_both_languages():
    assert translate("en", "people.imported", invited=1, unchanged=1) == \
        "1 person invited, 1 was already a member."  # "1 people invited, 1 were already members" before
    assert translate("en", "people.imported", invited=2, unchanged=0) == \
        "2 people invited, 0 were already members."
    assert translate("nl", "people.imported", invited=1, unchanged=2) == "1 persoon uitgenodigd, 2 waren al lid."


def test_numbers_and_plurals_in_the_readers_locale():
    assert plural(12345, "relatie", "relaties") == "12.345 relaties"
    assert plural(1, "relatie", "relaties") == "1 relatie"
    assert number(0.5, "nl") == "0,5" and number(0.5, "en") == "0.5"
    with speaking("en"):
        assert number(12345) == "12,345"
    # the costs page's amounts (issue 52: "$ 0,0015" and "1.000,00" were Dutch for everyone)
    assert amount(1234.5) == "1.234,50" and amount(0.0015, 4) == "0,0015" and amount(1000, 0) == "1.000"
    assert amount(1234.5, language="en") == "1,234.50" and amount(0.0015, 4, "en") == "0.0015"


def test_credits_are_read_as_the_reader_types_them():
    from r42_app.state.costs import typed_amount

    assert typed_amount("2500,5") == typed_amount(" 2500.5 ") == 2500.5  # Dutch: a comma or a dot is the point
    with speaking("en"):
        assert typed_amount("2,500.5") == 2500.5  # English: a comma groups thousands
    with pytest.raises(ValueError):
        typed_amount("twaalf")


def test_a_forgotten_persons_pseudonym_reads_in_the_readers_language():
    from r42_app.state.people import _who

    assert _who("verwijderd-3fa2b1c9") == "verwijderd-3fa2b1c9" and _who("Daan de Vries") == "Daan de Vries"
    with speaking("en"):
        assert _who("verwijderd-3fa2b1c9") == "removed-3fa2b1c9"  # it showed the stored Dutch word
        assert _who("anne@verwijderd-x.nl") == "anne@verwijderd-x.nl"  # only the pseudonym's own prefix


@pytest.mark.parametrize(("header", "language"), [
    ("en-GB,en;q=0.9,nl;q=0.8", "en"), ("nl-NL,nl;q=0.9,en;q=0.8", "nl"), ("de-DE,fr;q=0.9", None),
    ("de-DE,en;q=0.5,nl;q=0.7", "nl"), ("en;q=0", None), ("", None), ("EN_us", "en"), ("nl;q=abc,en;q=0.1", "en"),
])
def test_the_browsers_language_is_the_first_r42_speaks(header, language):
    assert best_language(header) == language


def test_language_of_takes_only_what_r42_speaks():
    assert [language_of(v) for v in ("en", "EN", "en-GB", "nl_NL", "de", "", None, 3)] == \
        ["en", "en", "en", "nl", None, None, None, None]


# -- the pages' own words (components/i18n.py t() and N_()) -------------------------------------------------------

TEXT_PROPS = {"aria_label", "placeholder", "title", "content", "label", "alt", "aria-label", "description"}
# Every page and component: its words go through t(), tf(), tm() or N_() (issue 52). What a state computes in Python
# (state/*.py) is not scanned yet: docs/USER-GUIDE.md says what still shows in Dutch.
TRANSLATED_PAGES = sorted(str(p.relative_to(p.parents[1])) for d in ("pages", "components")
                          for p in (Path(__file__).resolve().parents[2] / "r42_app" / d).glob("*.py"))


def unwrapped_words(path) -> list[str]:
    """Literal words a person would read that a page passes to a component without t(): positional children of
    rx.* calls and text props (aria-label, placeholder, title, ...). Strings without letters (" · ") are no words."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []

    def is_words(node) -> bool:  # a value such as "page" or "false" (an attribute's) is no word; "Leerling" is
        value = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        tokens = value.split()  # a class list ("r42-bubble r42-user", "learn-sidebar open") is no words
        css = all(re.fullmatch(r"[a-z0-9_-]+", tok) for tok in tokens) and any("-" in tok for tok in tokens)
        return bool(re.search(r"[^\W\d_]{2}", value) and (value[:1].isupper() or " " in value.strip()) and not css)

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        if not func.startswith("rx."):
            continue
        out += [f"{path.name}:{a.lineno} {a.value!r}" for a in node.args if is_words(a) and not func.startswith("rx.icon")]
        for k in node.keywords:
            if k.arg in TEXT_PROPS and is_words(k.value):
                out.append(f"{path.name}:{k.value.lineno} {k.arg}={k.value.value!r}")
            if k.arg == "custom_attrs" and isinstance(k.value, ast.Dict):
                out += [f"{path.name}:{v.lineno} {key.value}={v.value!r}" for key, v in zip(k.value.keys, k.value.values)
                        if isinstance(key, ast.Constant) and key.value in TEXT_PROPS and is_words(v)]
    return out


def test_every_page_word_is_in_every_catalogue_translated_and_used():
    from r42_app.catalogue import page_words, problems

    assert len(page_words()) >= 40  # the scan sees the pages' t() and N_() literals
    assert problems() == [], "run `python -m r42_app.catalogue update`, then translate:\n" + "\n".join(problems())


@pytest.mark.parametrize("page", TRANSLATED_PAGES)
def test_a_translated_page_shows_no_word_outside_the_catalogue(page):
    from r42_app.catalogue import PACKAGE

    assert unwrapped_words(PACKAGE / page) == []


def test_the_word_scan_finds_what_a_page_forgot(tmp_path):
    page = tmp_path / "p.py"
    page.write_text('import reflex as rx\nrx.text("Hallo daar", size="2")\nrx.text(t("Goed"))\nrx.icon("check")\n'
                    'rx.button(" · ", aria_label="Sluiten", custom_attrs={"aria-label": "Open het menu"})\n'
                    'rx.cond(x, "page", "false")\n')
    assert unwrapped_words(page) == ["p.py:2 'Hallo daar'", "p.py:5 aria_label='Sluiten'",
                                     "p.py:5 aria-label='Open het menu'"]
