"""POST /api/chat: authentication, input limits, rate limiting and a streamed answer, through the
real ASGI app, PocketBase and the anthropic SDK talking to the fake Messages API."""

import json

import httpx
import pytest

from r42_app.api import api
from tests.integration.conftest import rebuild_services

pytestmark = pytest.mark.anyio


@pytest.fixture
def token(pb_server, seeded):
    return pb_server.user("learner@example.com").token


async def post(token, body, raw=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        if raw is not None:
            return await client.post("/api/chat", content=raw, headers=headers)
        return await client.post("/api/chat", json=body, headers=headers)


def events_of(response):
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


async def test_streamed_answer_with_citations(api_env, token):
    api_env.reply_text("De dekkingsgraad is de verhouding tussen vermogen en verplichtingen [ref:1].")
    resp = await post(token, {"messages": [{"role": "user", "content": "Wat is de dekkingsgraad?"}], "mode": "fts"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = events_of(resp)
    assert "".join(e["text"] for e in events if e["type"] == "text").startswith("De dekkingsgraad")
    assert [e["slug"] for e in events if e["type"] == "citation"] == ["dekkingsgraad"]
    assert events[-1]["type"] == "done" and events[-1]["mode_used"] == "fts"


async def test_no_or_bad_token_is_401(api_env):
    for token in ("", "not-a-token"):
        resp = await post(token, {"messages": [{"role": "user", "content": "hoi"}]})
        assert resp.status_code == 401 and resp.json()["type"] == "unauthenticated"
    assert api_env.requests == []


@pytest.mark.parametrize("body, raw", [
    ({"messages": [{"role": "user", "content": "  "}]}, None),
    ({"messages": [{"role": "user", "content": "x" * 8001}]}, None),
    ({"messages": [{"role": "user", "content": "x"}] * 51}, None),
    ({"messages": [{"role": "user", "content": "x"}], "mode": "magic"}, None),
    (None, b"{not json"),
    (None, b"[1, 2]"),
])
async def test_bad_input_is_400(api_env, token, body, raw):
    resp = await post(token, body, raw)
    assert resp.status_code == 400 and resp.json()["type"] == "invalid_request" and resp.json()["message"], resp.text
    assert api_env.requests == [], [r["body"].get("messages") for r in api_env.requests]


async def test_too_fast_is_429_with_retry_after(api_env, token):
    statuses = []
    for _ in range(6):
        api_env.reply_text("Ja.")
        resp = await post(token, {"messages": [{"role": "user", "content": "AOW?"}], "mode": "fts"})
        statuses.append(resp.status_code)
    assert statuses[:4] == [200] * 4 and statuses[-1] == 429
    assert int(resp.headers["Retry-After"]) >= 1 and resp.json()["type"] == "rate_limited"


async def test_model_error_is_an_error_event(api_env, token):
    api_env.fail(500).fail(500)  # the app retries a 5xx once
    resp = await post(token, {"messages": [{"role": "user", "content": "AOW?"}], "mode": "fts"})
    assert resp.status_code == 200 and events_of(resp)[-1]["type"] == "error"


async def test_offline_without_api_key(api_env, token, monkeypatch):
    await rebuild_services()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    resp = await post(token, {"messages": [{"role": "user", "content": "Wat is de dekkingsgraad?"}], "mode": "fts"})
    events = events_of(resp)
    assert events[0]["type"] == "sources" and events[0]["sources"][0]["ref"] == 1  # what [ref:N] will point at
    assert events[-1]["offline"] is True and "[ref:" in events[1]["text"] and api_env.requests == []
    assert events[-1]["grounded"] is True


async def test_offline_an_off_topic_question_is_not_grounded(api_env, token, monkeypatch):
    await rebuild_services()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    resp = await post(token, {"messages": [{"role": "user", "content": "Wat wordt het weer morgen in Amsterdam?"}]})
    events = events_of(resp)
    text = "".join(e["text"] for e in events if e["type"] == "text")
    assert text == "Daarover staat niets in de kennisbank van je organisatie." and "UPO" not in text
    assert not [e for e in events if e["type"] == "citation"]  # nothing comes near: no chips (issue 49)
    assert events[-1]["type"] == "done" and events[-1]["grounded"] is False and api_env.requests == []
