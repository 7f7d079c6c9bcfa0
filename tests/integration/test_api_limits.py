"""Issue 10, hole 7: what `POST /api/chat` (and `POST /api/quiz/end`) do with hostile input -- a
huge body, JSON nested very deep, invalid Unicode, a turn that fails unexpectedly -- through the real
ASGI app, PocketBase and the fake Messages API."""

import json
import logging

import httpx
import pytest

from r42_app import api as api_module
from r42_app.api import MAX_BODY_BYTES, MAX_JSON_DEPTH, QUIZ_END_MAX_BODY_BYTES, api
from r42_app.chat import turn

pytestmark = pytest.mark.anyio

CHUNK = 64 * 1024
QUESTION = {"messages": [{"role": "user", "content": "Wat is de dekkingsgraad?"}], "mode": "fts"}


@pytest.fixture
def token(pb_server, seeded):
    return pb_server.user("learner@example.com").token


class CountingBody:
    """A request body sent in chunks (no Content-Length of its own), counting what the app read."""

    def __init__(self, total: int, head: bytes = b""):
        self.total, self.head, self.sent = total, head, 0

    async def __aiter__(self):
        while self.sent < self.total:
            chunk = (self.head if self.sent == 0 else b"") or b" " * min(CHUNK, self.total - self.sent)
            self.sent += len(chunk)
            yield chunk


async def post(path, token, content, headers=None):
    headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.post(path, content=content, headers=headers)


def events_of(response):
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def padded(body: dict, size: int) -> bytes:
    """`body` as JSON with trailing whitespace (still valid JSON) up to exactly `size` bytes."""
    raw = json.dumps(body).encode()
    return raw + b" " * (size - len(raw))


async def test_a_body_at_the_limit_is_answered(api_env, token):
    api_env.reply_text("De dekkingsgraad [ref:1].")
    resp = await post("/api/chat", token, padded(QUESTION, MAX_BODY_BYTES))
    assert resp.status_code == 200 and events_of(resp)[-1]["type"] == "done"


async def test_a_body_one_byte_over_the_limit_is_413(api_env, token):
    resp = await post("/api/chat", token, padded(QUESTION, MAX_BODY_BYTES + 1))
    assert resp.status_code == 413 and resp.json()["type"] == "payload_too_large" and resp.json()["message"]
    assert api_env.requests == []


async def test_a_large_content_length_is_refused_before_reading_the_body(api_env, token):
    body = CountingBody(10 * 1024 * 1024)
    resp = await post("/api/chat", token, body, {"Content-Length": str(body.total)})
    assert resp.status_code == 413 and resp.json()["type"] == "payload_too_large"
    assert body.sent == 0


async def test_a_chunked_body_is_read_only_up_to_the_limit(api_env, token):
    body = CountingBody(4 * 1024 * 1024, head=b'{"messages": [{"role": "user", "content": "')
    resp = await post("/api/chat", token, body)
    assert resp.status_code == 413 and resp.json()["type"] == "payload_too_large"
    assert body.sent <= MAX_BODY_BYTES + CHUNK
    assert api_env.requests == []


@pytest.mark.parametrize("depth", [100_000, MAX_JSON_DEPTH + 1])
async def test_json_nested_too_deep_is_400(api_env, token, depth):
    deep = b"[" * depth + b"]" * depth
    resp = await post("/api/chat", token, b'{"messages": [{"role": "user", "content": "AOW?"}], "x": ' + deep + b"}")
    assert resp.status_code == 400 and resp.json()["type"] == "invalid_request" and resp.json()["message"]
    assert api_env.requests == []


@pytest.mark.parametrize("mode", ["fts", "hybrid", "semantic"])
async def test_a_lone_surrogate_is_replaced_and_the_answer_completes(api_env, token, mode):
    api_env.reply_text("De dekkingsgraad is de verhouding tussen vermogen en verplichtingen.")
    question = b'{"role": "user", "content": "Wat is de dekkingsgraad \\ud800?"}'
    resp = await post("/api/chat", token, b'{"messages": [' + question + b'], "mode": "' + mode.encode() + b'"}')
    events = events_of(resp)
    assert resp.status_code == 200 and events[-1]["type"] == "done", events
    sent = api_env.requests[-1]["body"]["messages"][-1]["content"]
    assert sent == "Wat is de dekkingsgraad \ufffd?"


async def test_an_unexpected_failure_mid_turn_is_an_internal_error_event(api_env, token, monkeypatch, caplog):
    def broken(*_args):
        raise RuntimeError("boom")

    monkeypatch.setattr(turn, "resolve_citations", broken)
    api_env.reply_text("De dekkingsgraad [ref:1].")
    with caplog.at_level(logging.ERROR, logger=api_module.__name__):
        resp = await post("/api/chat", token, json.dumps(QUESTION).encode())
    events = events_of(resp)
    assert resp.status_code == 200 and [e["type"] for e in events[:2]] == ["sources", "text"]
    assert events[-1]["type"] == "error" and events[-1]["kind"] == "internal" and events[-1]["retryable"] is True
    assert events[-1]["message"] and "boom" not in events[-1]["message"]
    assert [e["type"] for e in events].count("error") == 1 and "done" not in [e["type"] for e in events]
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)


async def test_quiz_end_refuses_a_body_over_its_limit(api_env, token):
    resp = await post("/api/quiz/end", None, padded({"token": token}, QUIZ_END_MAX_BODY_BYTES + 1))
    assert resp.status_code == 413 and resp.json()["type"] == "payload_too_large"
    body = CountingBody(1024 * 1024)
    resp = await post("/api/quiz/end", None, body)
    assert resp.status_code == 413 and body.sent <= QUIZ_END_MAX_BODY_BYTES + CHUNK


async def test_quiz_end_with_json_nested_too_deep_is_not_a_500(api_env):
    resp = await post("/api/quiz/end", None, b"[" * 4000 + b"]" * 4000)
    assert resp.status_code == 401


async def test_a_burst_of_more_than_twice_the_limit_is_refused_whole_and_no_turn_runs(api_env, token):
    """A flood's first requests are through the flood gate before the rest overflow it: they are refused as well,
    with the guard's 429, and the model is never asked (issue 26)."""
    import asyncio

    from r42_app.flood_gate import FloodGate

    gated = FloodGate(api, per_minute=12, burst=2, tarpit=(0.0, 0.0))  # the gate lets 4 of one token through
    body = json.dumps(QUESTION).encode()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gated), base_url="http://r42") as client:
        answers = await asyncio.gather(*(client.post("/api/chat", content=body,
                                                     headers={"Authorization": f"Bearer {token}"})
                                         for _ in range(6)))
    assert [a.status_code for a in answers] == [429] * 6, [a.text[:80] for a in answers]
    assert all(a.json()["type"] == "rate_limited" and int(a.headers["retry-after"]) >= 1 for a in answers)
    assert api_env.requests == []  # not one turn reached the model
    api_env.reply_text("De dekkingsgraad is de verhouding tussen vermogen en verplichtingen.")
    calm = await post("/api/chat", token, body)  # the user's own limit is untouched: the next question is answered
    assert calm.status_code == 200 and events_of(calm)[-1]["type"] == "done"
