"""The flood gate (r42_app/flood_gate.py): one token's flood of chat requests is answered 429 before the app
reads it, on a bucket twice the user's limit; everything else goes through untouched."""

import asyncio

import httpx
import pytest

from r42_app.core.ratelimit import RateLimiter
from r42_app.flood_gate import TARPIT_S, FloodGate, flood_gate, flooded

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class App:
    """What the gate lets through: counted, and answered 200."""

    def __init__(self):
        self.seen = 0

    async def __call__(self, scope, receive, send):
        self.seen += 1
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})


def gate(clock=None):
    app = App()
    limiter = RateLimiter(per_minute=24, burst=8, clock=clock or Clock(), max_keys=100)  # user limit 12/min, 4
    return FloodGate(app, per_minute=12, burst=4, limiter=limiter, tarpit=(0.0, 0.0)), app


async def send(gated, path="/api/chat", token="tok-a", method="POST"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gated), base_url="http://r42") as client:
        return await client.request(method, path, headers=headers, json={"messages": []})


async def test_a_token_past_twice_the_burst_is_refused_without_reaching_the_app():
    gated, app = gate()
    answers = [await send(gated) for _ in range(12)]
    assert [a.status_code for a in answers] == [200] * 8 + [429] * 4
    assert app.seen == 8  # the four refusals never reached the app (nor its token check or guard)
    refused = answers[-1]
    assert refused.json() == {"type": "rate_limited", "message": refused.json()["message"]}
    assert "Wacht even" in refused.json()["message"]  # the guard's own Dutch words
    assert int(refused.headers["Retry-After"]) >= 1


async def test_other_tokens_paths_and_methods_go_through():
    gated, app = gate()
    for _ in range(9):
        await send(gated)
    assert (await send(gated)).status_code == 429
    assert (await send(gated, token="tok-b")).status_code == 200  # another user's token
    assert (await send(gated, path="/api/chat/delta")).status_code == 200  # not the chat
    assert (await send(gated, method="GET")).status_code == 200  # not a POST (the app answers 405 itself)
    assert (await send(gated, token="")).status_code == 200  # no token: the app answers 401 itself


async def test_the_gate_refills_at_twice_the_users_rate():
    clock = Clock()
    gated, _app = gate(clock)
    for _ in range(8):
        await send(gated)
    assert (await send(gated)).status_code == 429
    clock.now += 2.6  # 24 a minute: one new request every 2.5 s
    assert (await send(gated)).status_code == 200
    assert (await send(gated)).status_code == 429


def test_the_transformer_reads_this_deployments_limit(monkeypatch):
    monkeypatch.setenv("R42_CHAT_PER_MINUTE", "30")
    monkeypatch.setenv("R42_CHAT_BURST", "5")
    built = flood_gate(App())
    assert built.limiter.burst == 10 and built.limiter.rate == pytest.approx(60 / 60)
    assert built.limiter.max_keys is not None  # a flood of new tokens cannot grow it without bound


class Waiting:
    """An app whose requests wait (as a body read and a token check do) and then ask whether their token flooded."""

    def __init__(self):
        self.go = asyncio.Event()
        self.arrived = 0
        self.flooded: list[float | None] = []

    async def __call__(self, scope, receive, send):
        self.arrived += 1
        await self.go.wait()
        self.flooded.append(flooded(scope))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def test_a_burst_of_more_than_twice_the_limit_is_refused_whole():
    """The first eight of a flood are through the gate before the ninth overflows it: they learn so, and none of
    them becomes a turn (api.chat refuses them with the same 429)."""
    app = Waiting()
    gated = FloodGate(app, per_minute=12, burst=4, tarpit=(0.0, 0.0))
    first = [asyncio.create_task(send(gated)) for _ in range(8)]
    while app.arrived < 8:
        await asyncio.sleep(0.01)
    assert (await send(gated)).status_code == 429  # the ninth overflows the bucket
    app.go.set()
    await asyncio.gather(*first)
    assert len(app.flooded) == 8 and all(wait is not None and wait >= 1 for wait in app.flooded)


async def test_a_burst_within_the_gate_and_a_token_less_request_are_not_flooded():
    app = Waiting()
    gated = FloodGate(app, per_minute=12, burst=4, tarpit=(0.0, 0.0))
    app.go.set()
    for _ in range(8):
        await send(gated)
    await send(gated, token="")
    assert app.flooded == [None] * 9
    assert flooded({"type": "http"}) is None  # a request the gate never saw


async def test_a_floods_refusals_are_held_a_while():
    held = []

    async def sleep(seconds):
        held.append(seconds)

    gated = FloodGate(App(), per_minute=12, burst=4, sleep=sleep)
    answers = [await send(gated) for _ in range(10)]
    assert [a.status_code for a in answers].count(429) == 2
    assert len(held) == 2 and all(TARPIT_S[0] <= s <= TARPIT_S[1] for s in held)  # only the refusals wait
