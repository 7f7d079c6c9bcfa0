"""`/api/people` (issue 46): an admin's token manages their own tenant's people through the same service as the page
and the CLI; a learner's token and another tenant's admin get nothing; bad input is a 4xx that writes nothing."""

import secrets

import httpx
import pytest

from r42_app.api import api
from r42_app.core.messages import msg
from r42_app.services.adapters.mailer import Mailer
from r42_app.services.store.people import Actor, People
from r42_app.services.store.tenants import Tenants
from tests.conftest import user_token

pytestmark = pytest.mark.anyio
GOOD = "paarse-fiets-op-dinsdag"


@pytest.fixture
def org(admin_pb, seeded):
    """A tenant of its own with an active admin: (tenant, admin token)."""
    tenant = Tenants(admin_pb).create("api-" + secrets.token_hex(3), "API BV")
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"baas-{tenant.slug}@api.nl", "Baas", "admin")
    people.redeem(link.url.split("token=")[1], GOOD)
    return tenant, user_token(admin_pb, link.person.email, GOOD)


async def call(method, path, token, headers=None, **kwargs):
    headers = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.request(method, path, headers=headers, **kwargs)


async def test_an_admin_invites_lists_changes_and_imports(api_env, admin_pb, org):
    tenant, token = org
    made = await call("POST", "/api/people", token, json={"email": "Nieuw@API.nl", "name": "Nina", "role": "admin"})
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["state"] == "invited" and "/welkom?token=" in body["invite_url"] and body["mailed"] is False
    listed = (await call("GET", "/api/people?state=invited", token)).json()
    assert listed["total"] == 1 and listed["page"] == 1
    assert listed["items"][0] == {"id": body["id"], "email": "nieuw@api.nl", "name": "Nina", "role": "admin",
                                  "state": "invited", "last_sign_in": None,
                                  "signs_in_with": "password"}
    again = await call("POST", f"/api/people/{body['id']}/invite", token)
    assert again.status_code == 200 and again.json()["invite_url"] != body["invite_url"]

    csv = "email,name,role\nanna@api.nl,Anna,learner\nbram@api.nl,Bram,\n".encode()
    dry = await call("POST", "/api/people/import?dry_run=1", token, files={"file": ("klas.csv", csv, "text/csv")})
    assert dry.status_code == 200 and dry.json()["invited"] == 0 and dry.json()["new"] == 2
    assert (await call("GET", "/api/people", token)).json()["total"] == 2  # nothing written
    done = await call("POST", "/api/people/import", token, files={"file": ("klas.csv", csv, "text/csv")})
    assert done.status_code == 200 and done.json()["invited"] == 2
    assert {link["email"] for link in done.json()["links"]} == {"anna@api.nl", "bram@api.nl"}  # mail is off
    bad = await call("POST", "/api/people/import", token,
                     files={"file": ("klas.csv", b"email\nkapot\nanna@api.nl\n", "text/csv")})
    assert bad.status_code == 422 and bad.json()["bad"][0]["line"] == 2 and bad.json()["invited"] == 0

    anna = next(p for p in (await call("GET", "/api/people?q=anna", token)).json()["items"])
    assert (await call("PATCH", f"/api/people/{anna['id']}", token, json={"role": "admin"})).json()["role"] == "admin"
    still_invited = await call("PATCH", f"/api/people/{anna['id']}", token, json={"state": "deactivated"})
    assert still_invited.status_code == 409  # an invitation is withdrawn, not deactivated


@pytest.mark.parametrize("method, path, kwargs", [
    ("POST", "/api/people", {"json": {"email": "geen-adres"}}),
    ("POST", "/api/people", {"json": {"email": "x@api.nl", "name": "=HYPERLINK(\"http://evil\")"}}),
    ("POST", "/api/people", {"json": {"email": "x@api.nl", "role": "superuser"}}),
    ("POST", "/api/people", {"json": {"email": ["x@api.nl"]}}),
    ("POST", "/api/people", {"content": b"{not json"}),
    ("GET", "/api/people?per_page=100000", {}),
    ("POST", "/api/people/import", {"files": {"file": ("a.csv", b"x" * (1 << 20) + b"x", "text/csv")}}),
    ("POST", "/api/people/import", {"files": {"other": ("a.csv", b"a@b.nl\n", "text/csv")}}),
    ("POST", "/api/people/import", {"content": b"x" * (3 << 20)}),
])
async def test_bad_input_is_refused_and_writes_nothing(api_env, admin_pb, org, method, path, kwargs):
    tenant, token = org
    before = len(admin_pb.all("users", filter=f'tenant = "{tenant.id}"', fields="id"))
    answer = await call(method, path, token, **kwargs)
    assert answer.status_code in (400, 413, 422), answer.text
    assert answer.json()["message"]
    assert len(admin_pb.all("users", filter=f'tenant = "{tenant.id}"', fields="id")) == before


async def test_learners_and_other_tenants_get_nothing(api_env, admin_pb, org, seeded):
    tenant, token = org
    member = (await call("POST", "/api/people", token, json={"email": "lid@api.nl"})).json()["id"]
    learner = user_token(admin_pb, "learner@example.com")
    refused = await call("GET", "/api/people", learner)
    assert refused.status_code == 403 and refused.json()["message"] == msg("people.admins_only")
    assert (await call("POST", "/api/people", learner, json={"email": "x@api.nl"})).status_code == 403
    demo_admin = user_token(admin_pb, "admin@example.com")
    assert (await call("PATCH", f"/api/people/{member}", demo_admin, json={"role": "admin"})).status_code == 404
    assert (await call("POST", f"/api/people/{member}/invite", demo_admin)).status_code == 404
    assert all(p["email"] != "lid@api.nl" for p in (await call("GET", "/api/people", demo_admin)).json()["items"])
    assert (await call("GET", "/api/people", "")).status_code == 401


async def test_an_unknown_filter_is_a_400_not_an_error(api_env, org):
    _tenant, token = org
    for query in ("role=superuser", "state=weg", "page=0", "per_page=x"):
        answer = await call("GET", f"/api/people?{query}", token)
        assert answer.status_code == 400 and answer.json()["message"], (query, answer.text)


async def test_a_stalled_import_is_dropped_and_writes_nothing(api_env, admin_pb, org, monkeypatch):
    """A CSV whose body stops coming is answered 408 after R42_UPLOAD_READ_TIMEOUT_S, as a document upload is."""
    import asyncio

    from tests.integration.conftest import rebuild_services

    tenant, token = org
    monkeypatch.setenv("R42_UPLOAD_READ_TIMEOUT_S", "1")
    await rebuild_services()
    never = asyncio.Event()

    async def stalls():
        yield b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nanna@api.nl,Anna\r\n'
        await never.wait()

    before = len(admin_pb.all("users", filter=f'tenant = "{tenant.id}"', fields="id"))
    answer = await call("POST", "/api/people/import", token, content=stalls(),
                        headers={"Content-Type": "multipart/form-data; boundary=x"})
    assert answer.status_code == 408 and answer.json()["type"] == "upload_timeout"
    assert len(admin_pb.all("users", filter=f'tenant = "{tenant.id}"', fields="id")) == before
