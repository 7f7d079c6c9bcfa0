"""The pages' own words in the reader's language (issue 52). A page is written in Dutch; `t("Onderwerpen")` shows
"Onderwerpen" to a Dutch reader and the English catalogue's "Topics" to an English one, switching at once when the
person chooses another language (LanguageState.language; the words come from r42_app/locale/<lang>/LC_MESSAGES/r42.po,
entries without a code). Before the first event of a page (and for a word without a translation) the Dutch shows.
A label a state sets (a status) is marked with N_ where it is defined and shown with `tv(State.label)`.

tests/unit/test_catalogues.py finds every `t("...")` and `N_("...")` of the package: each must be in the catalogue,
translated, and every such catalogue entry used."""

from __future__ import annotations

import json

import reflex as rx
from reflex.vars.base import VarData

from r42_app.core.messages import CATALOGUE, N_
from r42_app.state.language import LanguageState

__all__ = ["N_", "language_marker", "t", "tf", "title_marker", "tm", "tv"]


def t(text: str) -> rx.Var[str]:
    """`text` (Dutch: a literal, or a label marked with N_) in the reader's language."""
    key = json.dumps(text, ensure_ascii=False)
    ui = LanguageState.ui
    return rx.Var(_js_expr=f"({ui}?.[{key}] ?? {key})", _var_type=str, _var_data=ui._get_all_var_data())


def tf(text: str, **fields: object) -> rx.Var[str]:
    """`text` with `{name}` fields (Dutch, a literal) in the reader's language, each field filled with its value (a
    state var or a plain value): one sentence for the translator, whatever the word order of their language."""
    expr, data = str(t(text)), [LanguageState.ui._get_all_var_data()]
    for name, value in fields.items():
        var = rx.Var.create(value)
        # a function, not a string: "$&", "$'" and "$`" in a value (an e-mail address may hold them) stay as written
        expr = f"{expr}.replaceAll({json.dumps('{' + name + '}')}, () => String({var}))"
        data.append(var._get_all_var_data())
    return rx.Var(_js_expr=f"({expr})", _var_type=str, _var_data=VarData.merge(*data))


def tm(code: str, **fields: object) -> rx.Var[str]:
    """A message of the catalogue by its code (core/messages.py) as a page shows it: in the reader's language,
    switching with it (msg() would say it once, in the language of whoever built the page)."""
    return tf(CATALOGUE[code], **fields) if fields else t(CATALOGUE[code])


def tv(value: object) -> rx.Var[str]:
    """A label a state keeps in Dutch (one of a fixed set, each marked with N_ where it is defined) in the reader's
    language, looked up as the page shows it: it switches at once with the language, and the state's value (what
    its logic and tests compare) stays Dutch. A value that is no page word (a name, a date) shows as it is."""
    var, ui = rx.Var.create(value), LanguageState.ui  # typeof: a name such as "constructor" is no page word
    return rx.Var(_js_expr=f"(typeof {ui}?.[{var}] === \"string\" ? {ui}[{var}] : {var})", _var_type=str,
                  _var_data=VarData.merge(ui._get_all_var_data(), var._get_all_var_data()))


def language_marker() -> rx.Component:
    """Carries the reader's language to the page's <html lang> (assets/r42.js follows it): a screen reader then
    reads the words in the right voice."""
    return rx.el.span(id="r42-lang", data_lang=LanguageState.language, hidden=True)


def title_marker(title: rx.Var | str) -> rx.Component:
    """Carries the page's title in the reader's language (a topic page: the topic's name) to the browser's tab
    (assets/r42.js sets document.title to it and " · R42"): Reflex's titles are fixed when the app is built, in
    Dutch, and every topic page was "Onderwerp"."""
    return rx.el.span(id="r42-page-title", data_title=t(title) if isinstance(title, str) else title, hidden=True)
