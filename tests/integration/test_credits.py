"""Tenant credits (issue 12): the pre-flight check refuses a model call with 402 and metadata when the
tenant has no credit, never offline; `r42 credits` shows, sets and adds (audited), and chat works again
at once after a top-up."""

import json

import httpx
import pytest

from r42_app.api import api
from tests.integration.conftest import rebuild_services
from tests.integration.test_cli_kb import run_cli

pytestmark = pytest.mark.anyio


@pytest.fixture
def demo_credits(admin_pb, seeded):
    demo = admin_pb.first("tenants", 'slug = "demo"')
    yield demo
    admin_pb.update("tenants", demo["id"], {"credits": demo["credits"],
                                            "credits_unlimited": demo.get("credits_unlimited", False)})


@pytest.fixture
def token(pb_server, seeded):
    return pb_server.user("learner@example.com").token


async def ask(token):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.post("/api/chat", json={"messages": [{"role": "user", "content": "Wat is AOW?"}],
                                                    "mode": "fts"}, headers={"Authorization": f"Bearer {token}"})


async def test_no_credits_is_402_with_metadata_and_no_model_call(api_env, token, pb_server, admin_pb, demo_credits):
    out = run_cli(pb_server, "credits", "set", "--tenant", "demo", "0")
    assert out.returncode == 0 and "demo: 0.00 credits" in out.stdout
    resp = await ask(token)
    assert resp.status_code == 402
    body = resp.json()
    assert body["type"] == "quota_exceeded" and body["reason"] == "no_credits" and "AI-tegoed" in body["message"]
    assert body["metadata"] == {"credits_remaining": 0.0, "minimum_credits": 1, "plan": "standaard",
                                "upgrade_url": "/admin/costs"}
    assert api_env.requests == []

    out = run_cli(pb_server, "credits", "add", "--tenant", "demo", "250")
    assert out.returncode == 0 and "250.00 credits" in out.stdout
    api_env.reply_text("De AOW is het basispensioen.")
    assert (await ask(token)).status_code == 200  # at once: no sign-in, no restart
    audit = admin_pb.all("audit_log", filter='tool = "credits.change"', sort="-created")
    assert [a["arguments"]["what"] for a in audit[:2]] == ["add 250", "set 0"]
    assert audit[0]["arguments"]["actor"] == "cli" and audit[0]["arguments"]["after"] == "250.00 credits"


async def test_an_unlimited_plan_and_the_offline_mode_need_no_credits(api_env, token, pb_server, admin_pb,
                                                                     demo_credits, monkeypatch):
    admin_pb.update("tenants", demo_credits["id"], {"credits": 0})
    out = run_cli(pb_server, "credits", "set", "--tenant", "demo", "--unlimited")
    assert out.returncode == 0 and "demo: unlimited" in out.stdout
    api_env.reply_text("Onbeperkt.")
    assert (await ask(token)).status_code == 200
    run_cli(pb_server, "credits", "set", "--tenant", "demo", "--limited")
    assert (await ask(token)).status_code == 402

    await rebuild_services()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")  # offline: no model, no cost, no check
    resp = await ask(token)
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1]["offline"] is True


@pytest.mark.parametrize("args,message", [
    (["show", "--tenant", "nergens"], "unknown tenant 'nergens'"),
    (["set", "--tenant", "demo"], "needs an amount"),
    (["set", "--tenant", "demo", "--", "-5"], "cannot be set below 0"),
    (["add", "--tenant", "demo", "nan"], "must be a number"),
])
def test_bad_credit_commands_exit_2_and_change_nothing(pb_server, admin_pb, demo_credits, args, message):
    before = admin_pb.get("tenants", demo_credits["id"])["credits"]
    out = run_cli(pb_server, "credits", *args)
    assert out.returncode == 2 and message in out.stderr
    assert admin_pb.get("tenants", demo_credits["id"])["credits"] == before
