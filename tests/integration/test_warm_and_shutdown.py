"""Warm before ready and one model client per worker (issue 26), through the real ASGI app, PocketBase and the
anthropic SDK against the loopback fake Messages API.

- /api/health says "warming" (503) until this worker has warmed, then "ok";
- warming builds the worker's one Anthropic client and runs the SDK's response path in memory: the fake
  Messages API is never asked, and the client is still open for the first question;
- every turn uses that same client (one connection pool), and the shutdown hook the app registers closes it.
"""

import asyncio

import httpx
import pytest

from r42_app import container
from r42_app.api import api
from r42_app.services.runtime import warmup as warmup_module
from r42_app.services.runtime.warmup import Warmup

pytestmark = pytest.mark.anyio


async def get_health():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.get("/api/health")


async def test_health_says_warming_until_the_worker_is_warm_and_warming_asks_the_model_nothing(
        api_env, seeded, monkeypatch):
    fresh = Warmup()
    monkeypatch.setattr(warmup_module, "WARMUP", fresh)
    resp = await get_health()
    assert resp.status_code == 503 and resp.json()["status"] == "warming", resp.text

    await asyncio.to_thread(fresh.run, container.services())
    resp = await get_health()
    assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
    assert resp.json()["warm"]["tenants"] >= 1
    svc = container.services()
    assert svc.built("llm") and not svc.llm.closed  # built while warming, and open for the first question
    assert api_env.requests == []  # the SDK's path ran in memory: the Messages API was never asked
    demo = svc.kb.require_tenant("demo")
    index = svc.retriever.index(demo)
    assert svc.retriever.warm_markers(demo) == len(index.passages) > 0  # every passage's markers, within budget
    assert svc.retriever.warm_markers(demo, budget_s=-1) == 0  # out of budget: the questions read the rest


async def test_every_turn_shares_one_client_and_the_shutdown_hook_closes_it(api_env, seeded, pb_server):
    from r42_app.r42_app import app, close_model_client

    assert close_model_client in app.get_lifespan_tasks()
    token = pb_server.user("learner@example.com").token
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        for question in ("Wat is de dekkingsgraad?", "Wat is een pensioenfonds?"):
            api_env.reply_text("Antwoord [ref:1].")
            resp = await client.post("/api/chat", headers={"Authorization": f"Bearer {token}"},
                                     json={"messages": [{"role": "user", "content": question}], "mode": "fts"})
            assert resp.status_code == 200 and '"type": "done"' in resp.text, resp.text
    svc = container.services()
    llm = svc.llm
    assert svc.chat.llm is llm and len(api_env.requests) == 2 and not llm.closed

    hook = asyncio.create_task(close_model_client())  # as the app's lifespan runs it
    await asyncio.sleep(0.05)
    assert not llm.closed  # open while the worker serves
    hook.cancel()  # the worker shuts down
    with pytest.raises(asyncio.CancelledError):
        await hook
    assert llm.closed
