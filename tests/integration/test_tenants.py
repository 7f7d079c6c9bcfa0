"""Organisations made on purpose (issue 46): `r42 tenant create|list|rename|disable|enable`, and what a disabled
tenant means, held by PocketBase itself (users.authRule, pb_hooks/r42_sessions.js) and by the app (sign-in, token
checks, the API, the chat turn's guard): its people cannot sign in, their tokens get 403, nothing is deleted, and
enabling it lets them in again. Other tenants do not notice."""

import json
import secrets

import httpx
import pytest

from r42_app.api import api
from r42_app.core.messages import msg
from r42_app.services.store.auth import AuthError, AuthService
from r42_app.services.store.pb import PBError, PocketBase
from r42_app.services.store.tenants import TenantError, Tenants
from tests.conftest import DEMO_PASSWORD, direct_sign_in, throwaway_user, user_token
from tests.integration.test_cli_kb import run_cli

pytestmark = pytest.mark.anyio


def new_slug() -> str:
    return "org-" + secrets.token_hex(3)


def listed(pb_server) -> dict:
    result = run_cli(pb_server, "tenant", "list", "--json")
    assert result.returncode == 0, result.stderr
    return {row["slug"]: row for row in json.loads(result.stdout)}


def test_an_operator_creates_lists_and_renames_a_tenant(pb_server, admin_pb, seeded):
    slug = new_slug()
    made = run_cli(pb_server, "tenant", "create", "--slug", slug, "--name", "Bakkerij Brood & Zo")
    assert made.returncode == 0, made.stderr
    assert f"created tenant '{slug}'" in made.stdout and f"r42 kb import --tenant {slug}" in made.stdout
    row = listed(pb_server)[slug]
    assert row == {"slug": slug, "name": "Bakkerij Brood & Zo", "state": "active", "people": 0, "topics": 0,
                   "credits": 1000, "language": "nl"}
    stored = admin_pb.first("tenants", f'slug = "{slug}"')
    assert stored["chatbot_enabled"] is True and set(stored["chatbot_default_capabilities"]) == {
        "qa_help", "kb_search", "data_write"}

    again = run_cli(pb_server, "tenant", "create", "--slug", slug, "--name", "Iets anders")
    assert again.returncode == 2 and f"tenant '{slug}' exists already" in again.stderr
    assert admin_pb.first("tenants", f'slug = "{slug}"')["name"] == "Bakkerij Brood & Zo"  # untouched

    Tenants(admin_pb).rename(slug, "  Bakkerij Brood  ")
    table = run_cli(pb_server, "tenant", "list")
    line = next(line for line in table.stdout.splitlines() if line.startswith(slug))
    assert "Bakkerij Brood" in line and line.split()[-1] == "active"
    assert table.stdout.splitlines()[0].split() == ["SLUG", "NAME", "PEOPLE", "TOPICS", "CREDITS", "LANGUAGE",
                                                     "STATE"]
    assert "demo" in listed(pb_server) and listed(pb_server)["demo"]["people"] >= 4  # the seeded people count

    # its language (issue 52): what its people see who chose none of their own
    english = run_cli(pb_server, "tenant", "language", "--slug", slug, "--set", "en")
    assert english.returncode == 0 and "speaks en" in english.stdout, english.stderr
    assert listed(pb_server)[slug]["language"] == "en"
    assert run_cli(pb_server, "tenant", "language", "--slug", slug).stdout.strip() == "en"
    bad = run_cli(pb_server, "tenant", "language", "--slug", slug, "--set", "de")
    assert bad.returncode == 2 and "language must be one of nl, en" in bad.stderr
    assert admin_pb.first("tenants", f'slug = "{slug}"')["language"] == "en"  # untouched


@pytest.mark.parametrize("slug, name, why", [
    ("Geen Slug", "Goed", "kebab-case"),
    ("", "Goed", "required"),
    ("goed-" + "x" * 80, "Goed", "longer than"),
    ("goede-slug", "", "a name is required"),
    ("goede-slug", "   ", "a name is required"),
    ("goede-slug", "x" * 201, "at most 200"),
    ("goede-slug", "Acme\x07", "control or invisible"),
    ("goede-slug", "Ac\u200bme", "control or invisible"),
    ("goede-slug", "Acme\u202eemcA", "control or invisible"),
])
def test_a_bad_slug_or_name_is_refused_and_nothing_is_written(admin_pb, seeded, slug, name, why):
    before = len(admin_pb.all("tenants", fields="id"))
    with pytest.raises(TenantError) as refused:
        Tenants(admin_pb).create(slug, name)
    assert why in str(refused.value) and refused.value.user_message  # a Dutch message for the page too
    assert len(admin_pb.all("tenants", fields="id")) == before


def test_the_cli_refuses_bad_input_and_unknown_tenants_with_exit_2(pb_server, seeded):
    bad = run_cli(pb_server, "tenant", "create", "--slug", "Geen Slug", "--name", "X")
    assert bad.returncode == 2 and "invalid tenant slug 'Geen Slug'" in bad.stderr
    unknown = run_cli(pb_server, "tenant", "disable", "--slug", "bestaat-niet")
    assert unknown.returncode == 2 and "unknown tenant 'bestaat-niet'" in unknown.stderr and "demo" in unknown.stderr


@pytest.fixture
def org(admin_pb, seeded):
    """A tenant of this test's own with one learner: (slug, e-mail); enabled again afterwards whatever happened."""
    slug = new_slug()
    tenants = Tenants(admin_pb)
    tenants.create(slug, "Uit Te Zetten BV")
    with throwaway_user(admin_pb, prefix="org", tenant_slug=slug) as (email, _row):
        yield slug, email
        tenants.set_state(slug, "active")


async def test_a_disabled_tenant_signs_nobody_in_and_its_tokens_get_403_until_it_is_enabled(
        pb_server, admin_pb, org, api_env):
    slug, email = org
    tenants = Tenants(admin_pb)
    token = user_token(admin_pb, email)
    demo_token = user_token(admin_pb, "learner@example.com")
    tenant_id = admin_pb.first("tenants", f'slug = "{slug}"')["id"]
    topics_before = len(admin_pb.all("topics", filter=f'tenant = "{tenant_id}"', fields="id"))

    assert tenants.set_state(slug, "disabled") is True
    assert tenants.set_state(slug, "disabled") is False  # nothing to do the second time

    # PocketBase itself: no new token for a REST client (after the right password), and the old one reads nothing
    with pytest.raises(PBError) as refused:
        direct_sign_in(pb_server.url, email)
    assert refused.value.status == 403
    own = PocketBase(pb_server.url, token=token)
    with pytest.raises(PBError) as forbidden:
        own.list("topics")
    assert forbidden.value.status == 403 and msg("auth.tenant_disabled") in str(forbidden.value)
    assert own.me()["email"] == email  # its own record stays readable: the app learns why from it
    assert PocketBase(pb_server.url, token=demo_token).list("topics", per_page=1)["items"]  # other tenants go on

    # the app: the sign-in says why, a token check knows, the API answers 403
    auth = AuthService(pb_server.url, admin=admin_pb)
    with pytest.raises(AuthError) as said:
        auth.sign_in(email, DEMO_PASSWORD)
    assert said.value.user_message == msg("auth.tenant_disabled")
    with pytest.raises(AuthError) as wrong:
        auth.sign_in(email, "niet-het-wachtwoord")
    assert wrong.value.code == "auth.wrong_password"  # a wrong password says nothing about the tenant
    assert auth.check(token, fresh=True).user.tenant_active is False
    assert auth.checks([token])[0].user.tenant_active is False
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        asked = await client.post("/api/chat", json={"messages": [{"role": "user", "content": "Wat is de AOW?"}]},
                                  headers={"Authorization": f"Bearer {token}"})
        assert asked.status_code == 403 and asked.json() == {"type": "tenant_disabled",
                                                              "message": msg("auth.tenant_disabled")}
        assert api_env.requests == []  # the model was never asked
        assert tenants.set_state(slug, "active") is True
        again = await client.post("/api/chat", json={"messages": [{"role": "user", "content": "Wat is de AOW?"}],
                                                     "mode": "fts"}, headers={"Authorization": f"Bearer {token}"})
        assert again.status_code == 200, again.text  # the same token works again: nothing was deleted
    assert auth.sign_in(email, DEMO_PASSWORD).user.tenant_active is True
    assert len(admin_pb.all("topics", filter=f'tenant = "{tenant_id}"', fields="id")) == topics_before


def test_the_chat_turns_guard_refuses_a_disabled_tenant(pb_server, admin_pb, org):
    """The guard a turn asks before it runs (r42_rules.js turnGuard) says why, so a tab that was open before the
    tenant was disabled gets the same message as the API."""
    slug, email = org
    token = user_token(admin_pb, email)
    user = admin_pb.first("users", f'email = "{email}"')
    tenants = Tenants(admin_pb)
    tenants.set_state(slug, "disabled")
    body = {"tenant": user["tenant"], "user": user["id"], "now": "2026-12-05 10:00:00.000Z", "role": "learner",
            "token": token}
    with pytest.raises(PBError) as refused:
        admin_pb.send("POST", "/api/r42/turn-guard", body=body)
    assert refused.value.status == 401 and refused.value.data.get("reason") == "tenant_disabled"
    tenants.set_state(slug, "active")
    assert admin_pb.send("POST", "/api/r42/turn-guard", body=body)


def test_disable_and_enable_from_the_cli(pb_server, admin_pb, org):
    slug, email = org
    off = run_cli(pb_server, "tenant", "disable", "--slug", slug)
    assert off.returncode == 0 and "nothing is deleted" in off.stdout
    assert listed(pb_server)[slug]["state"] == "disabled" and listed(pb_server)[slug]["people"] == 1
    with pytest.raises(PBError):
        direct_sign_in(pb_server.url, email)
    on = run_cli(pb_server, "tenant", "enable", "--slug", slug)
    assert on.returncode == 0 and "can sign in again" in on.stdout
    assert direct_sign_in(pb_server.url, email)
