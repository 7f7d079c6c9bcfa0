"""What an organisation's slug and name may be (core/tenants.py), before anything is written (issue 46)."""

import pytest

from r42_app.core.tenants import MAX_NAME, name_problem, slug_problem


@pytest.mark.parametrize("name", ["Acme", "  Bakkerij Brood & Zo  ", "Zorggroep Ûtrecht – Noord", "x" * MAX_NAME,
                                  "De 'Kleine' Haven (NL)"])
def test_names_people_write_pass(name):
    assert name_problem(name) == ""


@pytest.mark.parametrize("name, why", [
    (None, "required"), (42, "required"), ("", "required"), (" \t ", "required"),
    ("x" * (MAX_NAME + 1), "at most 200"),
    ("Acme\nBV", "U+000A"), ("Acme\x00", "U+0000"), ("Ac\u200dme", "U+200D"), ("Ac\u2028me", "U+2028"),
    ("\U000e0041cme", "U+E0041"), ("Acme\ue000", "U+E000"),
])
def test_names_that_would_show_oddly_or_hide_text_are_refused(name, why):
    assert why in name_problem(name)


@pytest.mark.parametrize("slug, ok", [("acme", True), ("acme-2", True), ("a", True), ("Acme", False),
                                      ("acme_bv", False), ("-acme", False), ("acme--bv", False), ("", False),
                                      (None, False), ("a" * 81, False)])
def test_slugs_are_kebab_case(slug, ok):
    assert (slug_problem(slug) == "") is ok
