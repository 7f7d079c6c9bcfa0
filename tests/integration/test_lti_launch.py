"""Opening R42 from a learning environment (issue 48, part 2): the LMS's login initiation, its authentication
response (a form post of a signed launch) and the landing, through the app's own routes against a real platform on
loopback (tests/lti_platform.py: joserfc, a real JWKS). As learner and as instructor; and every way a launch must be
refused: a replayed state and nonce, an unknown deployment, the wrong audience, an expired or tampered token."""

import base64
import json
import logging
import re
import secrets
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from r42_app.api import api
from r42_app.container import services
from r42_app.services.sso_signin import CODE_PARAM
from r42_app.services.store.lti import LtiStore
from r42_app.services.store.tenants import Tenants
from tests.lti_platform import INSTRUCTOR, LtiPlatform, form_fields

pytestmark = pytest.mark.anyio
JWT = re.compile(r"eyJ[\w-]{8,}\.[\w-]{8,}\.")  # a signed token: header.payload.signature


@pytest.fixture
def lms(admin_pb, seeded):
    tag = secrets.token_hex(3)
    tenant = Tenants(admin_pb).create("lms-" + tag, f"School {tag}")
    with LtiPlatform() as platform:
        LtiStore(admin_pb, loopback_ok=True).add(tenant, "", "cli", platform.issuer, platform.client_id,
                                                 [platform.deployment_id], platform.jwks_url, platform.auth_url)
        platform.person = {"sub": f"u-{tag}", "email": f"lotte@{tag}.school.nl", "name": "Lotte",
                           "roles": [platform.person["roles"][0]]}
        yield tenant, platform


async def open_from(platform: LtiPlatform, target: str = "http://127.0.0.1/topics/aow", replay: bool = False):
    """What the LMS and the browser do: post the login initiation, follow to the platform's authentication
    endpoint, post its form to the tool. Returns the tool's answer to the launch (and to a replay of it)."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        started = await tool.post("/lti/login", data=platform.initiation("http://r42/lti/login", target))
        if started.status_code != 302:
            return started, None
        sent = parse_qs(urlsplit(started.headers["location"]).query)
        assert sent["response_mode"] == ["form_post"] and sent["prompt"] == ["none"]
        page = httpx.get(started.headers["location"])
        assert page.status_code == 200, page.text
        action, fields = form_fields(page.text)
        assert urlsplit(action).path == "/lti/launch"
        landed = await tool.post("/lti/launch", data=fields)
        again = await tool.post("/lti/launch", data=fields) if replay else None
        return landed, again


async def signed_in(response):
    assert response.status_code == 303, response.text
    where = urlsplit(response.headers["location"])
    code = parse_qs(where.query)[CODE_PARAM][0]
    session = await services().sso_signin.redeem(code, "")  # a frame has no cookie: the code alone, once
    assert session is not None
    assert await services().sso_signin.redeem(code, "") is None
    return where.path, session


async def test_a_learner_and_an_instructor_land_signed_in_on_the_linked_page(api_env, admin_pb, lms):
    tenant, platform = lms
    origin = services().settings.link_base
    landed, _ = await open_from(platform, f"{origin}/topics/partnerpensioen")
    path, session = await signed_in(landed)
    assert path == "/topics/partnerpensioen"
    assert (session.user.tenant_id, session.user.role, session.user.email) == (
        tenant.id, "learner", platform.person["email"])
    assert admin_pb.get("users", session.user.id)["signs_in_with"] == "lti"

    platform.person = {"sub": "docent-1", "email": "", "name": "Dora Docent", "roles": [INSTRUCTOR]}
    landed, _ = await open_from(platform, "https://elders.example/phish")  # another site: lands on R42's home
    path, teacher = await signed_in(landed)
    assert path == "/" and teacher.user.role == "admin" and teacher.user.name == "Dora Docent"


async def test_the_lms_locale_is_the_persons_language_until_they_choose_one_in_r42(api_env, admin_pb, lms):
    """Issue 52: Moodle says the learner reads English: R42 speaks English to them from the launch on; a language
    the person chose in R42 (the account menu) stays theirs; a locale R42 does not speak changes nothing."""
    _tenant, platform = lms
    origin = services().settings.link_base
    platform.knobs["locale"] = "en-GB"
    _path, session = await signed_in((await open_from(platform, f"{origin}/topics/aow"))[0])
    assert session.user.language == "en" and admin_pb.get("users", session.user.id)["language"] == "en"

    admin_pb.update("users", session.user.id, {"language": "nl"})  # chose Dutch in R42 later
    platform.knobs["locale"] = "en-US"
    _path, again = await signed_in((await open_from(platform, f"{origin}/topics/aow"))[0])
    assert again.user.language == "nl" and admin_pb.get("users", session.user.id)["language"] == "nl"

    platform.person = {"sub": "u-de", "email": "", "name": "Dieter", "roles": platform.person["roles"]}
    platform.knobs["locale"] = "de-DE"  # not a language of R42: the organisation's
    _path, german = await signed_in((await open_from(platform, f"{origin}/topics/aow"))[0])
    assert german.user.language == "nl" and admin_pb.get("users", german.user.id)["language"] == ""


@pytest.mark.parametrize(("knob", "value", "code", "status"), [
    ("aud", "een-andere-tool", "lti.token_invalid", 400),
    ("iss", "https://nep-lms.example", "lti.token_invalid", 400),
    ("exp", -600, "lti.token_expired", 400),
    ("tamper", True, "lti.token_invalid", 400),
    ("nonce", "een-andere-nonce", "lti.token_invalid", 400),
    ("deployment_id", "dep-onbekend", "lti.unknown_deployment", 400),
])
async def test_a_launch_that_does_not_hold_is_refused_and_says_why(api_env, admin_pb, lms, caplog, knob, value,
                                                                  code, status):
    tenant, platform = lms
    platform.knobs[knob] = value
    with caplog.at_level(logging.INFO):
        landed, _ = await open_from(platform)
    assert landed.status_code == status
    from r42_app.core.messages import msg
    assert msg(code) in landed.text and 'lang="nl"' in landed.text
    assert admin_pb.all("users", filter=f'tenant = "{tenant.id}"') == []  # nobody was made
    assert not JWT.search(caplog.text)  # no token in the log (a random nonce may hold "eyJ"; a token has dots)


async def test_a_replayed_launch_an_unknown_platform_and_an_unknown_deployment_are_refused(api_env, admin_pb, lms):
    tenant, platform = lms
    landed, again = await open_from(platform, replay=True)
    await signed_in(landed)
    assert again.status_code == 400 and "al gebruikt" in again.text  # the state (and its nonce) went with the first
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        fields = platform.initiation("http://r42/lti/login", "http://r42/")
        unknown = await tool.post("/lti/login", data={**fields, "iss": "https://onbekend-lms.example"})
        assert unknown.status_code == 400 and "niet bij R42 aangemeld" in unknown.text
        other = await tool.post("/lti/login", data={**fields, "lti_deployment_id": "dep-9"})
        assert other.status_code == 400 and "koppeling" in other.text
        incomplete = await tool.get("/lti/login", params={"iss": platform.issuer})
        assert incomplete.status_code == 400
        forged = await tool.post("/lti/launch", data={"id_token": "x.y.z", "state": "verzonnen"})
        assert forged.status_code == 400


async def test_a_deactivated_person_is_refused_whatever_the_lms_says(api_env, admin_pb, lms):
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import Actor, People

    tenant, platform = lms
    _, session = await signed_in((await open_from(platform))[0])
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"baas-{tenant.slug}@school.nl", "Baas", "admin")
    people.redeem(link.url.split("token=")[1], "paarse-fiets-op-dinsdag")
    people.set_state(tenant, Actor.cli(), session.user.id, "deactivated")
    landed, _ = await open_from(platform)
    assert landed.status_code == 403 and "gedeactiveerd" in landed.text


async def test_the_tool_serves_one_public_key_that_checks_what_it_signs_and_outlives_a_restart(api_env, admin_pb):
    from joserfc import jwt
    from joserfc.jwk import KeySet

    from tests.integration.conftest import rebuild_services

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        served = await tool.get("/lti/jwks")
    assert served.status_code == 200 and "max-age" in served.headers["cache-control"]
    keys = served.json()["keys"]
    assert len(keys) == 1 and keys[0]["kty"] == "RSA" and keys[0]["kid"]
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(keys[0])  # the public half only
    signed = services().tool_key.sign({"iss": "r42", "aud": "moodle", "nonce": "n"})
    assert jwt.decode(signed, KeySet.import_key_set(served.json())).claims["aud"] == "moodle"
    await rebuild_services()  # another process (a restart, another worker) signs with the same key
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        assert (await tool.get("/lti/jwks")).json() == served.json()


async def deep_link_launch(tool: httpx.AsyncClient, platform: LtiPlatform) -> httpx.Response:
    """A teacher's "add an activity" in the LMS: the deep-linking launch, through the platform's authentication."""
    started = await tool.post("/lti/login", data=platform.initiation("http://r42/lti/login", "http://r42/",
                                                                     deep_link=True))
    assert started.status_code == 302, started.text
    _action, fields = form_fields(httpx.get(started.headers["location"]).text)
    return await tool.post("/lti/launch", data=fields)


async def test_a_teacher_adds_a_topic_to_a_course_and_the_lms_accepts_the_signed_answer(api_env, admin_pb, lms):
    from r42_app.services.store.kb_store import KBStore

    tenant, platform = lms
    KBStore(admin_pb).create_topic(tenant, {"id": "aow-leeftijd", "label": "AOW-leeftijd", "type": "concept",
                                            "description": "Wanneer de AOW ingaat."})
    platform.person = {"sub": "docent-dl", "email": "", "name": "Dora Docent", "roles": [INSTRUCTOR]}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        picker = await deep_link_launch(tool, platform)
        assert picker.status_code == 200 and "R42 toevoegen aan je cursus" in picker.text
        assert picker.headers["x-r42-frame-ancestors"] == platform.issuer  # framed by its LMS only
        assert '<option value="/">R42 (de assistent)</option>' in picker.text
        assert '<option value="/topics/aow-leeftijd">AOW-leeftijd</option>' in picker.text
        ticket = re.search(r'name="ticket" value="([^"]+)"', picker.text).group(1)

        offside = await tool.post("/lti/deep-link", data={"ticket": ticket, "target": "/admin/people"})
        assert offside.status_code == 400 and "Kies een onderwerp uit de lijst" in offside.text
        answer = await tool.post("/lti/deep-link", data={"ticket": ticket, "target": "/topics/aow-leeftijd"})
        assert answer.status_code == 200, answer.text
        action, fields = form_fields(answer.text)
        assert action == f"{platform.issuer}/deep-link-return"
        assert answer.headers["x-r42-form-action"] == platform.issuer
        keys = (await tool.get("/lti/jwks")).json()
        [item] = platform.accept_deep_link(fields["JWT"], keys)
        assert item == {"type": "ltiResourceLink", "title": "AOW-leeftijd",
                        "url": services().settings.link_base.rstrip("/") + "/topics/aow-leeftijd"}
        again = await tool.post("/lti/deep-link", data={"ticket": ticket, "target": "/"})
        assert again.status_code == 400 and "al gebruikt" in again.text  # one answer per request

        other = LtiPlatform()  # an LMS of someone else cannot be fooled into taking this tool's answer for its own
        with pytest.raises(ValueError, match="aud"):
            other.client_id = platform.client_id
            other.deployment_id, other.dl_data = platform.deployment_id, platform.dl_data
            other.accept_deep_link(fields["JWT"], keys)
        forged = fields["JWT"].rsplit(".", 1)[0] + "." + fields["JWT"].rsplit(".", 1)[1][::-1]
        with pytest.raises(ValueError, match="signature"):
            platform.accept_deep_link(forged, keys)


async def test_a_learner_cannot_add_r42_to_a_course(api_env, admin_pb, lms):
    _tenant, platform = lms
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        refused = await deep_link_launch(tool, platform)
    assert refused.status_code == 400 and "Alleen een beheerder" in refused.text
    assert refused.headers["x-r42-frame-ancestors"] == "*"  # the reason shows inside the LMS, not a browser error


async def test_only_a_launched_page_may_be_framed_and_only_by_its_platform(api_env, admin_pb, lms):
    from starlette.responses import HTMLResponse

    from r42_app.core.lti import FRAME_PARAM
    from r42_app.http_headers import SecurityHeaders

    _tenant, platform = lms
    landed, _ = await open_from(platform, f"{services().settings.link_base}/topics/partnerpensioen")
    grant = parse_qs(urlsplit(landed.headers["location"]).query)[FRAME_PARAM][0]

    async def page(scope, receive, send):
        await HTMLResponse("<!doctype html><p>R42</p>")(scope, receive, send)

    served = SecurityHeaders(page, ("http://r42",))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://r42") as browser:
        framed = await browser.get("/topics/partnerpensioen", params={FRAME_PARAM: grant})
        plain = await browser.get("/topics/partnerpensioen")
        body, sig = grant.split(".")
        forged_body = base64.urlsafe_b64encode(json.dumps(
            {"o": ["https://aanvaller.example"], "e": 4_000_000_000}).encode()).rstrip(b"=").decode()
        forged = await browser.get("/", params={FRAME_PARAM: f"{forged_body}.{sig}"})
    assert framed.headers["content-security-policy"].endswith(f"; frame-ancestors {platform.issuer}")
    assert "x-frame-options" not in framed.headers
    for refused in (plain, forged):
        assert "frame-ancestors 'none'" in refused.headers["content-security-policy"]
        assert refused.headers["x-frame-options"] == "DENY"
