"""IMS Dynamic Registration (issue 48, part 2): an admin's one-time URL, opened by a real LMS on loopback
(tests/lti_platform.py: an openid-configuration with a registration endpoint that hands out a client id and a
deployment), registers R42 there and the LMS here, after which a launch from that LMS signs in. The URL works once;
a refused registration gives it back; an LMS cannot register under another host's name."""

import secrets
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from r42_app.api import api
from r42_app.container import services
from r42_app.core.messages import msg
from r42_app.services.store.lti import LtiStore
from r42_app.services.store.tenants import Tenants
from tests.integration.test_lti_launch import open_from, signed_in
from tests.lti_platform import LtiPlatform

pytestmark = pytest.mark.anyio


@pytest.fixture
def school(admin_pb, seeded):
    tag = secrets.token_hex(3)
    tenant = Tenants(admin_pb).create("dr-" + tag, f"Academie {tag}")
    with LtiPlatform() as platform:
        yield tenant, platform


async def opened_by_lms(url: str, platform: LtiPlatform, token: str | None = None) -> httpx.Response:
    """What Moodle does with the URL the admin pasted: open it with its configuration and a registration token."""
    where = urlsplit(url)
    query = {**{k: v[0] for k, v in parse_qs(where.query).items()},
             "openid_configuration": platform.openid_configuration,
             "registration_token": platform.registration_token if token is None else token}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as tool:
        return await tool.get(where.path, params=query)


async def test_an_lms_registers_itself_with_the_admins_url_and_then_launches(api_env, admin_pb, school):
    tenant, platform = school
    made = services().lti_registrations.invitation(tenant, "", "cli")
    assert made.url.startswith(services().settings.link_base.rstrip("/") + "/lti/register?r42_invite=")
    page = await opened_by_lms(made.url, platform)
    assert page.status_code == 200 and "R42 is gekoppeld" in page.text, page.text
    assert "org.imsglobal.lti.close" in page.text  # the LMS closes its registration window
    assert page.headers["x-r42-frame-ancestors"] == platform.issuer

    [sent] = platform.registered
    base = services().settings.link_base.rstrip("/")
    assert (sent["initiate_login_uri"], sent["redirect_uris"], sent["jwks_uri"]) == (
        f"{base}/lti/login", [f"{base}/lti/launch"], f"{base}/lti/jwks")
    types = [m["type"] for m in sent["https://purl.imsglobal.org/spec/lti-tool-configuration"]["messages"]]
    assert "LtiDeepLinkingRequest" in types

    [reg] = LtiStore(admin_pb, loopback_ok=True).list(tenant)
    assert (reg.issuer, reg.client_id, reg.deployment_ids, reg.jwks_url, reg.auth_url, reg.instructor_role) == (
        platform.issuer, "client-1", ("dep-dr-1",), platform.jwks_url, platform.auth_url, "admin")
    path, session = await signed_in((await open_from(platform, f"{base}/"))[0])
    assert path == "/" and session.user.tenant_id == tenant.id

    again = await opened_by_lms(made.url, platform)  # once only
    assert again.status_code == 400 and msg("lti.registration_expired") in again.text
    assert len(platform.registered) == 1


async def test_a_refused_registration_keeps_the_url_and_a_foreign_issuer_is_refused(api_env, admin_pb, school):
    tenant, platform = school
    made = services().lti_registrations.invitation(tenant, "", "cli")
    refused = await opened_by_lms(made.url, platform, token="een-verkeerd-token")  # the LMS says no (401)
    assert refused.status_code == 400 and msg("lti.registration_refused") in refused.text
    assert LtiStore(admin_pb, loopback_ok=True).list(tenant) == []

    platform.knobs["configuration"] = {"issuer": "http://127.0.0.9:9"}  # claims to be another LMS
    foreign = await opened_by_lms(made.url, platform)
    assert foreign.status_code == 400 and msg("lti.configuration_invalid") in foreign.text
    assert platform.registered == []

    platform.knobs.pop("configuration")
    page = await opened_by_lms(made.url, platform)  # the same URL still works after the failures
    assert page.status_code == 200 and len(LtiStore(admin_pb, loopback_ok=True).list(tenant)) == 1

    made_up = await opened_by_lms("http://r42/lti/register?r42_invite=verzonnen", platform)
    assert made_up.status_code == 400 and msg("lti.registration_expired") in made_up.text
