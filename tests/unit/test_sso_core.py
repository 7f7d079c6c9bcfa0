"""core/sso.py: which settings a tenant may save, what a checked ID token makes of a person, and where the browser
may return to after signing in with the organisation (never another site)."""

import secrets

import pytest

from r42_app.core.sso import (
    SsoConfig,
    SsoError,
    domain_of,
    issuer_problem,
    parse_domains,
    person_from,
    pkce_challenge,
    safe_next,
    settings_problem,
)

CONFIG = SsoConfig("t1", "acme", "Acme", "https://login.acme.nl", "r42", ("acme.nl", "acme.be"), "r42-beheer")


def test_the_s256_challenge_agrees_with_an_independent_implementation():
    from authlib.oauth2.rfc7636 import create_s256_code_challenge  # Authlib's (a test dependency)

    for _ in range(20):
        verifier = secrets.token_urlsafe(48)
        assert pkce_challenge(verifier) == create_s256_code_challenge(verifier)


@pytest.mark.parametrize(("issuer", "problem"), [
    ("https://login.acme.nl", ""), ("https://login.microsoftonline.com/abc/v2.0", ""),
    ("http://127.0.0.1:9000", ""), ("http://localhost:8080/realms/r42", ""),
    ("http://login.acme.nl", "sso.issuer_https"), ("ftp://login.acme.nl", "sso.issuer_invalid"),
    ("https://login.acme.nl?x=1", "sso.issuer_invalid"), ("https://user:pw@login.acme.nl", "sso.issuer_invalid"),
    ("", "sso.issuer_invalid"), (None, "sso.issuer_invalid"), ("login.acme.nl", "sso.issuer_invalid"),
])
def test_an_issuer_is_an_https_url_or_one_on_this_machine(issuer, problem):
    assert issuer_problem(issuer) == problem


def test_an_http_issuer_on_loopback_only_while_the_app_runs_on_loopback_itself():
    assert issuer_problem("http://127.0.0.1:9000", loopback_ok=False) == "sso.issuer_https"
    assert issuer_problem("http://localhost:8080", loopback_ok=False) == "sso.issuer_https"
    assert issuer_problem("https://127.0.0.1:9000", loopback_ok=False) == ""


def test_domains_are_lowercase_without_repeats_and_each_must_be_a_domain():
    assert parse_domains(" Acme.NL, @acme.be,acme.nl,, ") == ("acme.nl", "acme.be")
    assert parse_domains(["bücher.de"]) == ("xn--bcher-kva.de",)
    for bad in ("acme", "acme..nl", "-acme.nl", "acme.nl/x", "a b.nl"):
        with pytest.raises(SsoError) as caught:
            parse_domains(bad)
        assert caught.value.code == "sso.domains_invalid"
    for empty in ("", " , ", [], 42):
        with pytest.raises(SsoError) as caught:
            parse_domains(empty)
        assert caught.value.code == "sso.domains_missing"
    with pytest.raises(SsoError) as caught:
        parse_domains([f"d{i}.nl" for i in range(51)])
    assert caught.value.code == "sso.domains_too_many"


def test_domain_of_an_address():
    assert domain_of("Lotte@Acme.NL ") == "acme.nl"
    assert [domain_of(x) for x in ("lotte", "a@b@acme.nl", "@acme.nl", "a@acme", None)] == [""] * 5


def test_settings_problems():
    assert settings_problem("r42", "geheim", "") == ""
    assert settings_problem("", "geheim", "") == "sso.client_id_invalid"
    assert settings_problem("r42", " ", "") == "sso.secret_invalid"
    assert settings_problem("r42", "een\ntwee", "") == "sso.secret_invalid"
    assert settings_problem("r42", "geheim", "g" * 201) == "sso.group_invalid"


def claims(**extra):
    return {"sub": "abc", "email": "Lotte@acme.nl", "email_verified": True, **extra}


def test_a_verified_address_of_the_tenant_is_a_person_and_the_admin_group_decides_the_role():
    person = person_from(claims(name="  Lotte   Jansen "), CONFIG)
    assert (person.subject, person.email, person.name, person.admin) == ("abc", "lotte@acme.nl", "Lotte Jansen", False)
    assert person_from(claims(given_name="Lotte", family_name="Jansen"), CONFIG).name == "Lotte Jansen"
    assert person_from(claims(groups=["r42-beheer"]), CONFIG).admin is True
    # Entra ID's optional claim for a verified address (it sends no email_verified)
    assert person_from({"sub": "e", "email": "a@acme.nl", "xms_edov": True}, CONFIG).email == "a@acme.nl"
    assert person_from(claims(groups="r42-beheer"), CONFIG).admin is False  # not a list: no group
    no_group = SsoConfig("t1", "acme", "Acme", "https://login.acme.nl", "r42", ("acme.nl",))
    assert person_from(claims(groups=[""]), no_group).admin is False


@pytest.mark.parametrize(("extra", "code"), [
    ({"email": "lotte@elders.nl"}, "sso.domain_not_allowed"),
    ({"email": "lotte@sub.acme.nl"}, "sso.domain_not_allowed"),  # a subdomain is another domain
    ({"email_verified": False}, "sso.email_unverified"),
    ({"email_verified": "true"}, "sso.email_unverified"),  # text is not a verified flag
    ({"email_verified": False, "xms_edov": "1"}, "sso.email_unverified"),
    ({"email": None}, "sso.no_email"),
    ({"sub": ""}, "sso.token_invalid"),
    ({"sub": 12}, "sso.token_invalid"),
])
def test_refusals_say_why(extra, code):
    with pytest.raises(SsoError) as caught:
        person_from(claims(**extra), CONFIG)
    assert caught.value.code == code


@pytest.mark.parametrize(("path", "safe"), [
    ("/", "/"), ("/topics/partnerpensioen", "/topics/partnerpensioen"), ("/graph?focus=a-b", "/graph?focus=a-b"),
    ("//evil.example/x", "/"), ("https://evil.example", "/"), ("/\\evil.example", "/"), ("javascript:alert(1)", "/"),
    ("/a b", "/"), ("", "/"), (None, "/"), ("/" + "a" * 600, "/"), ("/x#frag", "/"),
    ("/\r\nSet-Cookie: x", "/"), ("/a\nb", "/"), ("/%0d%0a", "/%0d%0a"),  # encoded it stays text in the Location
])
def test_the_way_back_is_always_one_of_our_pages(path, safe):
    assert safe_next(path) == safe
