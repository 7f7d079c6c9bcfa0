"""core/lti.py (issue 48, part 2): a platform registration is checked before it is stored, and a launch whose
signature held still has to be a supported message of a registered deployment that names a person; roles map to
R42's two, and a launch lands only on one of this app's pages."""

import pytest

from r42_app.core.lti import (
    CLAIM,
    DEEP_LINKING,
    DL_CLAIM,
    RESOURCE_LINK,
    LtiError,
    launch_of,
    registration,
    role_of,
    target_path,
)

OWN = ("https://r42.acme.nl",)
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/"
REG = registration("t1", "https://moodle.school.nl", "abc123", ["1", "2", " 2 "],
                   "https://moodle.school.nl/mod/lti/certs.php", "https://moodle.school.nl/mod/lti/auth.php")


def claims(**extra):
    base = {"sub": "42", "email": "Lotte@School.NL", "name": "Lotte  Jansen",
            CLAIM + "message_type": RESOURCE_LINK, CLAIM + "version": "1.3.0", CLAIM + "deployment_id": "1",
            CLAIM + "resource_link": {"id": "rl-1"}, CLAIM + "roles": [ROLE + "membership#Learner"],
            CLAIM + "target_link_uri": "https://r42.acme.nl/topics/partnerpensioen",
            CLAIM + "launch_presentation": {"locale": "nl-NL", "document_target": "iframe"}}
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def test_a_registration_keeps_its_deployments_once_and_wants_https_endpoints():
    assert REG.deployment_ids == ("1", "2")
    assert REG.instructor_role == "admin"
    for bad, code in ((dict(issuer="http://moodle.school.nl"), "lti.issuer_invalid"),
                      (dict(jwks_url="ftp://x"), "lti.jwks_url_invalid"),
                      (dict(auth_url=""), "lti.auth_url_invalid"),
                      (dict(token_url="http://x.nl/token"), "lti.token_url_invalid"),
                      (dict(client_id=" "), "lti.client_id_invalid"),
                      (dict(deployment_ids=[]), "lti.deployments_invalid"),
                      (dict(deployment_ids="1"), "lti.deployments_invalid"),
                      (dict(instructor_role="superuser"), "lti.role_invalid")):
        args = dict(issuer="https://moodle.school.nl", client_id="abc", deployment_ids=["1"],
                    jwks_url="https://moodle.school.nl/certs", auth_url="https://moodle.school.nl/auth") | bad
        with pytest.raises(LtiError) as caught:
            registration("t1", **args)
        assert caught.value.code == code
    local = registration("t1", "http://127.0.0.2:8000", "c", ["d"], "http://127.0.0.2:8000/jwks",
                         "http://127.0.0.2:8000/auth", loopback_ok=True)
    assert local.issuer == "http://127.0.0.2:8000"


def test_a_resource_link_launch_says_who_lands_where_as_what():
    launch = launch_of(claims(), REG, OWN)
    assert (launch.subject, launch.email, launch.name, launch.role) == ("42", "lotte@school.nl", "Lotte Jansen",
                                                                        "learner")
    assert (launch.target, launch.locale, launch.resource_link) == ("/topics/partnerpensioen", "nl-NL", "rl-1")


@pytest.mark.parametrize(("roles", "instructor_role", "role"), [
    ([ROLE + "membership#Instructor"], "admin", "admin"),
    ([ROLE + "membership#Instructor"], "learner", "learner"),
    ([ROLE + "institution/person#Administrator"], "admin", "admin"),
    (["Instructor"], "admin", "admin"),
    ([ROLE + "membership#Learner", ROLE + "membership#Mentor"], "admin", "learner"),
    ([ROLE + "membership/Instructor#TeachingAssistant"], "admin", "learner"),
    ([], "admin", "learner"), (None, "admin", "learner"), ("Instructor", "admin", "learner"),
])
def test_roles_map_to_learner_or_the_registrations_instructor_role(roles, instructor_role, role):
    assert role_of(roles, instructor_role) == role


@pytest.mark.parametrize(("extra", "code"), [
    ({CLAIM + "message_type": "LtiSubmissionReviewRequest"}, "lti.message_type"),
    ({CLAIM + "message_type": None}, "lti.message_type"),
    ({CLAIM + "version": "1.1"}, "lti.version"),
    ({CLAIM + "deployment_id": "9"}, "lti.unknown_deployment"),
    ({CLAIM + "deployment_id": None}, "lti.unknown_deployment"),
    ({"sub": None}, "lti.no_subject"),
    ({"sub": ""}, "lti.no_subject"),
    ({CLAIM + "resource_link": {}}, "lti.invalid_launch"),
    ({CLAIM + "message_type": DEEP_LINKING}, "lti.invalid_launch"),  # no deep_link_return_url
])
def test_a_launch_that_is_not_one_we_support_says_why(extra, code):
    with pytest.raises(LtiError) as caught:
        launch_of(claims(**extra), REG, OWN)
    assert caught.value.code == code


def test_a_deep_linking_request_keeps_its_return_url_and_data():
    launch = launch_of(claims(**{CLAIM + "message_type": DEEP_LINKING, CLAIM + "resource_link": None,
                                 DL_CLAIM + "deep_linking_settings": {
                                     "deep_link_return_url": "https://moodle.school.nl/mod/lti/contentitem_return.php",
                                     "accept_types": ["ltiResourceLink"], "data": "opaque-123"}}), REG, OWN)
    assert launch.return_url.endswith("contentitem_return.php") and launch.return_data == "opaque-123"


@pytest.mark.parametrize(("uri", "path"), [
    ("https://r42.acme.nl/topics/aow", "/topics/aow"), ("https://r42.acme.nl/", "/"),
    ("https://r42.acme.nl/graph?focus=aow", "/graph?focus=aow"), ("https://r42.acme.nl", "/"),
    ("https://evil.example/topics/aow", "/"), ("https://r42.acme.nl.evil.example/x", "/"),
    ("https://r42.acme.nl/lti/launch", "/"), ("https://r42.acme.nl//evil.example", "/"), (None, "/"),
])
def test_a_launch_lands_only_on_a_page_of_this_app(uri, path):
    assert target_path(uri, OWN) == path


def test_a_launched_page_may_be_framed_by_the_platform_and_where_the_launch_says_it_comes_from():
    from r42_app.core.lti import frame_origins

    canvas = registration("t1", "https://canvas.instructure.com", "10000000000001", ["d"],
                          "https://sso.canvaslms.com/api/lti/security/jwks",
                          "https://sso.canvaslms.com/api/lti/authorize_redirect")
    said = claims(**{CLAIM + "launch_presentation": {"return_url": "https://school.instructure.com/courses/7"}})
    assert frame_origins(canvas, said) == ("https://canvas.instructure.com", "https://sso.canvaslms.com",
                                           "https://school.instructure.com")
    assert frame_origins(REG, claims()) == ("https://moodle.school.nl",)  # one origin, once
    junk = claims(**{CLAIM + "launch_presentation": {"return_url": "javascript:alert(1)"}})
    assert frame_origins(REG, junk) == ("https://moodle.school.nl",)


def test_a_frame_grant_holds_only_signed_with_the_key_and_until_it_expires():
    from r42_app.core.lti import FRAME_S, frame_grant, framing_origins

    key = b"k" * 32
    grant = frame_grant(("https://moodle.school.nl",), key, now=1000.0)
    assert framing_origins(grant, key, 1000.0 + FRAME_S - 1) == ("https://moodle.school.nl",)
    assert framing_origins(grant, key, 1000.0 + FRAME_S + 1) == ()  # expired
    assert framing_origins(grant, b"x" * 32, 1000.0) == ()  # another key (another installation)
    body, sig = grant.split(".")
    assert framing_origins(body + "." + sig[:-2] + "AA", key, 1000.0) == ()
    for junk in ("", "a.b.c", "x" * 3000, None, 42, "....", "bm9wZQ.bm9wZQ"):
        assert framing_origins(junk, key, 1000.0) == ()
    # a grant signed with the key but naming things that are not origins: those are dropped
    odd = frame_grant(("https://ok.example", "javascript:x", "https://a.example/path", "*"), key, now=1000.0)
    assert framing_origins(odd, key, 1000.0) == ("https://ok.example",)


def test_the_deep_linking_answer_goes_from_the_tool_to_the_platform_with_its_data():
    from r42_app.core.lti import deep_link_response

    answer = deep_link_response(REG, "1", "opaque", "AOW", "https://r42.acme.nl/topics/aow", 1000.0, "n1")
    assert (answer["iss"], answer["aud"], answer["exp"], answer["nonce"]) == ("abc123", REG.issuer, 1300, "n1")
    assert answer[CLAIM + "message_type"] == "LtiDeepLinkingResponse" and answer[CLAIM + "deployment_id"] == "1"
    assert answer[DL_CLAIM + "data"] == "opaque"
    assert answer[DL_CLAIM + "content_items"] == [
        {"type": "ltiResourceLink", "title": "AOW", "url": "https://r42.acme.nl/topics/aow"}]
    assert DL_CLAIM + "data" not in deep_link_response(REG, "1", "", "AOW", "https://x", 0.0, "n")
