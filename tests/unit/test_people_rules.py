"""What a person's e-mail, name, role and password may be, and how a CSV of people is read (core/people.py; issue
46): every bad row named with its line and why, nothing guessed."""

import pytest

from r42_app.core.messages import msg
from r42_app.core.people import (
    MAX_IMPORT_BYTES,
    MAX_IMPORT_ROWS,
    PeopleInputError,
    clean_email,
    clean_name,
    clean_role,
    parse_people_csv,
    password_problem,
)


@pytest.mark.parametrize("raw, clean", [("jan@acme.nl", "jan@acme.nl"), ("  Jan.de.Vries@Acme.NL ", "jan.de.vries@acme.nl"),
                                        ("a+b@sub.acme.example", "a+b@sub.acme.example"), ("o'brien@acme.ie", "o'brien@acme.ie")])
def test_plain_addresses_pass_in_lower_case(raw, clean):
    assert clean_email(raw) == clean


@pytest.mark.parametrize("raw", ["", "   ", None, "jan", "jan@", "@acme.nl", "jan@acme", "jan@@acme.nl", "jan @acme.nl",
                                 "Jan <jan@acme.nl>", "<jan@acme.nl>", "jan@acme..nl", "jan..x@acme.nl", "jan@-acme.nl",
                                 "jan\u200b@acme.nl", "jan@ac\nme.nl", "jan@acme.nl\x00", "x" * 250 + "@acme.nl",
                                 "=HYPERLINK(\"http://evil\")", "jan@[127.0.0.1]"])
def test_anything_but_one_plain_address_is_refused_in_dutch(raw):
    with pytest.raises(PeopleInputError) as refused:
        clean_email(raw)
    assert refused.value.code in ("people.email_required", "people.bad_email", "people.email_no_at",
                                  "people.email_no_domain", "people.not_email")
    assert msg(refused.value.code, **refused.value.fields)


@pytest.mark.parametrize(("raw", "says"), [
    ("foo@bar", "na de @ hoort een domein"),  # was "zonder naam of <…>", which was not what was wrong
    ("jan.acme.nl", "er hoort één @ in"),
    ("jan@@acme.nl", "er hoort één @ in"),
    ("Jan <jan@acme.nl>", "zonder naam of <…>"),
    ("jan@acme..nl", "geen e-mailadres, zoals naam@organisatie.nl"),
])
def test_a_refused_address_says_what_to_mend(raw, says):
    with pytest.raises(PeopleInputError) as refused:
        clean_email(raw)
    assert says in msg(refused.value.code, **refused.value.fields)


def test_a_name_is_trimmed_and_defaults_to_the_address():
    assert clean_name("  Jan de Vries ", "jan@acme.nl") == "Jan de Vries"
    assert clean_name("", "jan.devries@acme.nl") == "jan.devries"
    assert clean_name("Zoë O'Neill-Öztürk") == "Zoë O'Neill-Öztürk"


@pytest.mark.parametrize("name, code", [("=HYPERLINK(\"http://evil\",\"klik\")", "people.formula"),
                                        ("+31 6 1234", "people.formula"), ("-2+3", "people.formula"),
                                        ("@SUM(A1)", "people.formula"), ("Jan\x07", "people.bad_name"),
                                        ("Jan\u202eeD", "people.bad_name"), ("x" * 101, "people.bad_name"),
                                        ("Ja\nn", "people.bad_name")])
def test_formulas_control_characters_and_long_names_are_refused(name, code):
    with pytest.raises(PeopleInputError) as refused:
        clean_name(name, "jan@acme.nl")
    assert refused.value.code == code


@pytest.mark.parametrize("raw, role", [("", "learner"), (None, "learner"), ("learner", "learner"), ("Admin", "admin"),
                                       ("beheerder", "admin"), ("Deelnemer", "learner"), ("cursist", "learner")])
def test_roles_in_dutch_or_english(raw, role):
    assert clean_role(raw) == role


@pytest.mark.parametrize("raw", ["superuser", "owner", "ADMIN ", 3])
def test_other_roles_are_refused(raw):
    if raw == "ADMIN ":
        assert clean_role(raw) == "admin"  # trimmed, any case
        return
    with pytest.raises(PeopleInputError) as refused:
        clean_role(raw)
    assert refused.value.code == "people.bad_role"


@pytest.mark.parametrize("password, code", [
    ("kort", "people.password_short"), (None, "people.password_short"), ("a" * 80, "people.password_long"),
    ("aaaaaaaaaaaa", "people.password_guessable"), ("ababababab", "people.password_guessable"),
    ("Wachtwoord123", "people.password_guessable"), ("jan.devries-2026", "people.password_guessable"),
    ("geheim\u200bgeheim", "people.password_odd"), ("Jan de Vries wachtwoord", "people.password_guessable"),
    ("zomer-vries-2026", "people.password_guessable"),
])
def test_weak_passwords_are_refused_with_why(password, code):
    problem = password_problem(password, "jan.devries@acme.nl", "Jan de Vries")
    assert problem is not None and problem.code == code and msg(problem.code, **problem.fields)


def test_a_reasonable_password_passes():
    assert password_problem("paarse-fiets-op-dinsdag", "jan@acme.nl", "Jan") is None


def csv(text: str, bom: bool = False) -> tuple:
    return parse_people_csv(("\ufeff" if bom else "").encode() + text.encode())


def test_a_dutch_excel_file_with_a_header_bom_and_semicolons():
    good, bad = csv("E-mailadres;Naam;Rol\r\njan@acme.nl;Jan de Vries;beheerder\r\npiet@acme.nl;\"Piet; de Tweede\";\r\n",
                    bom=True)
    assert [(r.line, r.email, r.name, r.role) for r in good] == [
        (2, "jan@acme.nl", "Jan de Vries", "admin"), (3, "piet@acme.nl", "Piet; de Tweede", "learner")]
    assert bad == []


def test_commas_without_a_header_and_a_header_in_another_order():
    good, _ = csv("jan@acme.nl,Jan,learner\nkees@acme.nl,Kees,admin\n")
    assert [(r.email, r.role) for r in good] == [("jan@acme.nl", "learner"), ("kees@acme.nl", "admin")]
    good, _ = csv("role,email,name\nadmin,jan@acme.nl,Jan\n")
    assert [(r.email, r.name, r.role) for r in good] == [("jan@acme.nl", "Jan", "admin")]


def test_every_bad_row_is_named_with_its_line_and_reason():
    good, bad = csv("email,name,role\n"
                    "jan@acme.nl,Jan,learner\n"
                    "geen-adres,Iemand,learner\n"
                    "\n"
                    "kees@acme.nl,=HYPERLINK(\"http://evil\"),learner\n"
                    "JAN@acme.nl,Jan Weer,admin\n"
                    "els@acme.nl,Els,directeur\n"
                    "Piet <piet@acme.nl>,Piet,\n")
    assert [r.email for r in good] == ["jan@acme.nl"]
    assert [(b.line, b.code) for b in bad] == [(3, "people.email_no_at"), (5, "people.formula"),
                                                (6, "people.csv_duplicate"), (7, "people.bad_role"),
                                                (8, "people.bad_email")]
    shown = [b.to_json() for b in bad]
    assert shown[2]["reason"] == "Dit adres staat al op regel 2." and shown[3]["reason"].startswith("Onbekende rol")


@pytest.mark.parametrize("data, code", [
    (b"", "people.csv_empty"), (b"\n\n  \n", "people.csv_empty"), (b"email,name,role\n", "people.csv_empty"),
    (b"jan@acme.nl,J\xe9r\xf4me,learner\n", "people.csv_not_utf8"), (b"jan@acme.nl\x00,x\n", "people.csv_not_utf8"),
    (b"x" * (MAX_IMPORT_BYTES + 1), "people.csv_too_big"),
    ("".join(f"p{i}@acme.nl,P{i},learner\n" for i in range(MAX_IMPORT_ROWS + 1)).encode(), "people.csv_too_many"),
])
def test_a_file_that_cannot_be_read_is_refused_whole(data, code):
    with pytest.raises(PeopleInputError) as refused:
        parse_people_csv(data)
    assert refused.value.code == code and msg(code, **refused.value.fields)


def test_five_thousand_rows_are_read():
    data = "email;naam;rol\n" + "".join(f"p{i}@acme.nl;Persoon {i};deelnemer\n" for i in range(MAX_IMPORT_ROWS))
    good, bad = parse_people_csv(data.encode())
    assert len(good) == MAX_IMPORT_ROWS and bad == [] and good[-1].line == MAX_IMPORT_ROWS + 1
