"""Issue 52: a language per person. PATCH /api/me stores it on the person (PocketBase, not the browser), the
organisation's language is the default, and R42 then speaks it: the API's messages, the offline answer's
sentences, and the model is told to answer in it. Through the real ASGI app, PocketBase and the anthropic SDK
talking to the fake Messages API."""

import json

import httpx
import pytest

from r42_app.api import api
from r42_app.services.store.pb import PBError
from tests.conftest import throwaway_user
from tests.integration.conftest import rebuild_services

pytestmark = pytest.mark.anyio


@pytest.fixture
def person(pb_server, seeded):
    """(token, record) of a learner of the demo tenant of this test only."""
    with throwaway_user(pb_server.admin_client(), prefix="taal") as (email, row):
        yield pb_server.user(email).token, row


async def call(method, path, token=None, body=None, headers=None):
    headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.request(method, path, json=body, headers=headers)


def answer_of(response) -> str:
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "done", response.text
    return "".join(e["text"] for e in events if e["type"] == "text")


async def test_a_person_chooses_english_and_r42_speaks_it(api_env, person, pb_server, monkeypatch):
    token, row = person
    me = await call("GET", "/api/me", token)
    assert me.status_code == 200 and me.json()["language"] == "nl" and me.json()["email"] == row["email"]

    for bad in ({"language": "de"}, {"language": 1}, {"taal": "en"}, {"language": "en", "role": "admin"}, ["en"]):
        refused = await call("PATCH", "/api/me", token, bad)
        assert refused.status_code == 400 and refused.json()["message"].startswith("Kies een taal"), bad
    assert pb_server.admin_client().first("users", f'id = "{row["id"]}"')["language"] == ""  # nothing stored

    chosen = await call("PATCH", "/api/me", token, {"language": "en"})
    assert chosen.status_code == 200 and chosen.json()["language"] == "en"
    assert pb_server.admin_client().first("users", f'id = "{row["id"]}"')["language"] == "en"  # on the person
    assert (await call("GET", "/api/me", token)).json()["language"] == "en"
    # its refusals are English now
    refused = await call("PATCH", "/api/me", token, {"language": "fr"})
    assert refused.json()["message"].startswith("Choose a language")

    # the model is told which language (the system prompt's per-turn tail) ...
    api_env.reply_text("Pension accrual is ... [ref:1]")
    resp = await call("POST", "/api/chat", token, {"messages": [{"role": "user", "content": "What is opbouw?"}],
                                                    "mode": "fts"})
    assert resp.status_code == 200
    tail = api_env.requests[-1]["body"]["system"][-1]["text"]
    assert "answer in English" in tail and "Dutch" not in tail
    # ... and without a model, the offline answer's own sentences are English (the knowledge base's text stays Dutch)
    await rebuild_services()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    off_topic = {"messages": [{"role": "user", "content": "What will the weather be tomorrow in Amsterdam?"}]}
    assert answer_of(await call("POST", "/api/chat", token, off_topic)) == \
        "There is nothing about that in your organisation's knowledge base."

    back = await call("PATCH", "/api/me", token, {"language": "nl"})
    assert back.json()["language"] == "nl"
    assert answer_of(await call("POST", "/api/chat", token, off_topic)) == \
        "Daarover staat niets in de kennisbank van je organisatie."


async def test_the_organisations_language_is_the_default_and_empty_goes_back_to_it(api_env, person, pb_server):
    token, row = person
    pb = pb_server.admin_client()
    demo = pb.first("tenants", 'slug = "demo"')
    pb.update("tenants", demo["id"], {"language": "en"})
    try:
        assert (await call("GET", "/api/me", token)).json()["language"] == "en"  # nobody chose: the organisation's
        assert (await call("PATCH", "/api/me", token, {"language": "nl"})).json()["language"] == "nl"
        again = await call("PATCH", "/api/me", token, {"language": ""})  # "" is the organisation's again
        assert again.status_code == 200 and again.json()["language"] == "en"
        assert pb.first("users", f'id = "{row["id"]}"')["language"] == ""
    finally:
        pb.update("tenants", demo["id"], {"language": ""})


async def test_before_a_token_the_browsers_language_and_pocketbase_stores_no_other_language(api_env, pb_server,
                                                                                             person):
    _token, row = person
    link = "/api/kb/documents/abc/file?tenant=x&expires=1&sig=y"  # a link without a token: an expired one
    english = await call("GET", link, headers={"Accept-Language": "de-DE,en-GB;q=0.9,nl;q=0.8"})
    assert english.status_code == 410 and english.json()["message"].startswith("This link to the original file")
    dutch = await call("GET", link, headers={"Accept-Language": "fr-FR"})  # nothing R42 speaks: Dutch
    assert dutch.json()["message"].startswith("Deze link naar het originele bestand")
    with pytest.raises(PBError) as refused:  # the wall: a select of the languages there are catalogues for
        pb_server.admin_client().update("users", row["id"], {"language": "de"})
    assert refused.value.status == 400
    assert pb_server.admin_client().first("users", f'id = "{row["id"]}"')["language"] == ""
