"""The catalogue's upkeep (issue 52): `python -m r42_app.catalogue update` takes the pages' words into the PO files,
`check` says what is missing. The pages' own words are the literals of `t("...")` and `N_("...")` in the package
(components/i18n.py); the messages by code live in the PO files themselves (Dutch is their source).

    python -m r42_app.catalogue update   # new words into every language (Dutch filled in, others to translate),
                                         # words no page uses any more out
    python -m r42_app.catalogue check    # exit 1 with what is untranslated, unknown or unused

Then translate the empty `msgstr`s with any PO editor (Poedit, Lokalize, Weblate)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from babel.messages.pofile import read_po, write_po

from r42_app.core.messages import DEFAULT_LANGUAGE, LANGUAGES, catalogue_path

PACKAGE = Path(__file__).resolve().parent
MARKERS = ("t", "tf", "N_")


def page_words(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Every literal of t("...") / N_("...") under `root`: its text -> where ("path:line")."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value, []).append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def problems() -> list[str]:
    """What `check` reports: words of the pages missing from a catalogue or untranslated, words nobody uses."""
    words = page_words()
    out = []
    for lang in LANGUAGES:
        with open(catalogue_path(lang), "rb") as f:
            catalog = read_po(f)
        kept = {m.id: m.string for m in catalog if m.id and not m.context}
        out += [f"{lang}: missing {text!r} ({words[text][0]})" for text in words if text not in kept]
        if lang != DEFAULT_LANGUAGE:
            out += [f"{lang}: untranslated {text!r}" for text, string in kept.items() if text in words and not string]
        out += [f"{lang}: unused {text!r}" for text in kept if text not in words]
    return out


def update() -> None:
    words = page_words()
    for lang in LANGUAGES:
        path = catalogue_path(lang)
        with open(path, "rb") as f:
            catalog = read_po(f)
        for message in list(catalog):
            if message.id and not message.context and message.id not in words:
                catalog.delete(message.id)
        for text in words:
            if catalog.get(text) is None:
                catalog.add(text, string=text if lang == DEFAULT_LANGUAGE else "")  # no line numbers: they churn
        with open(path, "wb") as f:
            write_po(f, catalog, width=120, sort_output=False)


def main(argv: list[str]) -> int:
    if argv[:1] == ["update"]:
        update()
        print(f"{len(page_words())} page words in {', '.join(LANGUAGES)}; untranslated ones have an empty msgstr")
        return 0
    if argv[:1] == ["check"]:
        found = problems()
        print("\n".join(found) or "the catalogues hold every page word, translated, and no unused one")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
