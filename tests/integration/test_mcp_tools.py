"""External tools over MCP (issue 13), with real MCP servers over stdio (the `mcp-server-time` package
and `r42 mcp demo-server`), the real PocketBase and the fake model through the real SDK: offered only
with `external_tools`, audited, rate limited, confirmed when high risk (bound, once), not-invocable
as a payload, and reconnected when a server dies."""

import asyncio
import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from r42_app.chat.external import create_mcp_external_tools_provider
from r42_app.chat.external_runtime import ExternalRuntime
from r42_app.chat.tools import builtin_registry
from r42_app.chat.turn import ChatDeps, run_turn
from r42_app.core.capabilities import DENY, EXTERNAL_TOOLS
from r42_app.core.mcp import ConfirmationError, McpConfig, McpServerSpec
from r42_app.services.adapters.llm import AnthropicLLM
from r42_app.services.adapters.mcp import McpHub, McpRegistry
from r42_app.services.runtime.shared_state import MemorySharedState, SharedRateLimiter
from r42_app.services.store.access import AccessStore
from r42_app.services.store.audit import ToolAudit
from r42_app.services.store.auth import AuthService
from tests.conftest import DEMO_PASSWORD, throwaway_user

pytestmark = pytest.mark.anyio
R42 = str(Path(sys.executable).parent / "r42")


@pytest.fixture
async def servers(tmp_path):
    """Both demo servers, connected; their messages go to a file of this test."""
    messages = tmp_path / "messages.jsonl"
    registry = McpRegistry()
    config = McpConfig(servers=(
        McpServerSpec("time", sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC")),
        McpServerSpec("r42demo", R42, ("mcp", "demo-server"), {"R42_MCP_DEMO_MESSAGES": str(messages)})),
        high_risk=frozenset({"r42demo__send_message"}), calls_per_minute=3)
    hub = McpHub(config, registry)
    await hub.start(wait=30)
    assert [s.state for s in hub.statuses()] == ["connected", "connected"], hub.statuses()
    yield hub, registry, messages
    await hub.stop()


@pytest.fixture
def someone(admin_pb, seeded, pb_server):
    """A throw-away learner of demo (whose tenant default includes external_tools), signed in."""
    with throwaway_user(admin_pb, name="Mcp Test", prefix="mcp") as (email, row):
        yield AuthService(pb_server.url, pb_server.admin_client()).sign_in(email, DEMO_PASSWORD).user


@pytest.fixture
async def turn_deps(indexed, claude, admin_pb, servers):
    """ChatDeps as the app builds them, with the MCP provider over this test's servers."""
    kb, _, _, retriever = indexed
    _hub, registry, _messages = servers
    tools = builtin_registry()
    tools.add_provider(create_mcp_external_tools_provider(registry))
    llm = AnthropicLLM("test-key", "claude-test", base_url=claude.url, max_retries=0)
    tool_limit = SharedRateLimiter(MemorySharedState(), "tool", per_minute=3, burst=3)
    deps = ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=AccessStore(admin_pb), tools=tools,
                    external=ExternalRuntime(ToolAudit(admin_pb), tool_limit))
    yield deps
    await llm.aclose()


def ask(text="Hoe laat is het?"):
    return [{"role": "user", "content": text}]


async def collect(gen):
    """The turn's events as the HTTP API sends them (event.to_json())."""
    return [e.to_json() async for e in gen]


def audit_rows(admin_pb, user, tool):
    return admin_pb.all("audit_log", filter=f'user = "{user.id}" && tool = "mcp:{tool}"', sort="created")


async def test_the_time_server_answers_through_the_chat_and_is_audited(turn_deps, someone, claude, admin_pb):
    claude.reply_tool("time__get_current_time", {"timezone": "Europe/Amsterdam"})
    claude.reply_text("Het is nu middag in Amsterdam.")
    events = await collect(run_turn(someone, ask(), turn_deps, "fts"))
    assert {"type": "tool", "name": "time__get_current_time", "input": {"timezone": "Europe/Amsterdam"}} in events
    offered = [t["name"] for t in claude.requests[0]["body"]["tools"]]
    assert {"time__get_current_time", "r42demo__send_message", "r42demo__pension_accrual"} <= set(offered)
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    assert "is_error" not in result and json.loads(result["content"])["timezone"] == "Europe/Amsterdam"
    [row] = audit_rows(admin_pb, someone, "time__get_current_time")
    assert row["status"] == "ok" and row["arguments"] == {"timezone": "Europe/Amsterdam"} and row["duration_ms"] >= 0


async def _until_confirmation(turn):
    """Run the turn until it asks for a confirmation; returns the event."""
    async for event in turn:
        if event.type == "confirm_required":
            return event.to_json()
    raise AssertionError("the turn never asked for a confirmation")


async def test_a_high_risk_call_runs_only_after_the_user_allows_it_and_once(turn_deps, someone, claude, admin_pb,
                                                                          servers):
    _hub, _registry, messages = servers
    args = {"subject": "Vraag", "text": "Kan iemand mij bellen?"}
    claude.reply_tool("r42demo__send_message", args)
    claude.reply_text("Je bericht is verstuurd.")
    turn = run_turn(someone, ask("Stuur de beheerder een bericht"), turn_deps, "fts")
    asked = await _until_confirmation(turn)
    assert asked["tool"] == "r42demo__send_message" and asked["input"] == args
    await asyncio.sleep(0.3)
    assert not messages.exists()  # nothing runs before the answer
    broker = turn_deps.external.broker
    with pytest.raises(ConfirmationError) as other:
        await broker.answer(asked["id"], "someone-else", "allow")
    assert other.value.kind == "other_user"
    await broker.answer(asked["id"], someone.id, "allow")
    rest = await collect(turn)
    assert rest[-1]["type"] == "done"
    sent = [json.loads(line) for line in messages.read_text().splitlines()]
    assert len(sent) == 1 and sent[0]["tenant"] == "demo" and sent[0]["user"] == someone.email
    with pytest.raises(ConfirmationError) as replay:  # the same yes cannot run it again
        await broker.answer(asked["id"], someone.id, "allow")
    assert replay.value.kind == "used"
    [row] = audit_rows(admin_pb, someone, "r42demo__send_message")
    assert row["status"] == "ok" and row["confirmed_by"] == someone.email


async def test_weigeren_gives_the_model_a_declined_result(turn_deps, someone, claude, admin_pb, servers):
    _hub, _registry, messages = servers
    claude.reply_tool("r42demo__send_message", {"subject": "x", "text": "y"})
    claude.reply_text("Oké, ik heb niets verstuurd.")
    turn = run_turn(someone, ask("Stuur een bericht"), turn_deps, "fts")
    asked = await _until_confirmation(turn)
    await turn_deps.external.broker.answer(asked["id"], someone.id, "deny")
    await collect(turn)
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    assert result["is_error"] is True and json.loads(result["content"])["status"] == "declined"
    assert not messages.exists()
    assert audit_rows(admin_pb, someone, "r42demo__send_message")[-1]["status"] == "declined"


async def test_the_rate_limit_per_user_and_tool_holds(turn_deps, someone, claude, admin_pb):
    for _ in range(4):
        claude.reply_tool("r42demo__pension_accrual", {"salary": 40000})
        claude.reply_text("Klaar.")
        await collect(run_turn(someone, ask("Bereken mijn opbouw"), turn_deps, "fts"))
    last = claude.requests[-1]["body"]["messages"][-1]["content"][0]
    assert last["is_error"] is True and json.loads(last["content"])["status"] == "rate_limited"
    statuses = [r["status"] for r in audit_rows(admin_pb, someone, "r42demo__pension_accrual")]
    assert statuses == ["ok", "ok", "ok", "rate_limited"]


async def test_a_tool_without_invoke_answers_the_not_invocable_payload(turn_deps, someone, claude, servers):
    _hub, registry, _messages = servers
    registry.register_mcp_tool_for_chatbot("crm__lookup", "Look a customer up.", None, invoke=None, risk="low")
    claude.reply_tool("crm__lookup", {"name": "x"})
    claude.reply_text("Dat kan ik niet.")
    await collect(run_turn(someone, ask("Zoek klant x"), turn_deps, "fts"))
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    payload = json.loads(result["content"])
    assert result["is_error"] is True and payload["status"] == "not-invocable" and payload["tool"] == "crm__lookup"


async def test_a_killed_server_gives_a_structured_error_and_is_reconnected(turn_deps, someone, claude, servers):
    hub, registry, _messages = servers
    [child] = [p for p in psutil.Process(os.getpid()).children(recursive=True)
               if "mcp_server_time" in " ".join(p.cmdline())]
    child.kill()
    child.wait(10)
    outcome = await registry.get("time__get_current_time").invoke({"timezone": "UTC"}, {})
    assert outcome.status == "not-invocable" and json.loads(outcome.content)["status"] == "not-invocable"
    for _ in range(150):  # the supervisor notices and reconnects with backoff
        if hub.statuses()[0].connects == 2 and hub.statuses()[0].state == "connected":
            break
        await asyncio.sleep(0.2)
    assert hub.statuses()[0].connects == 2 and hub.statuses()[0].state == "connected"
    again = await registry.get("time__get_current_time").invoke({"timezone": "UTC"}, {})
    assert again.status == "ok"


async def test_without_external_tools_they_are_neither_offered_nor_run(turn_deps, someone, claude, admin_pb):
    AccessStore(admin_pb).set_override(someone.tenant, someone.id, EXTERNAL_TOOLS, DENY, "", "cli")
    claude.reply_tool("time__get_current_time", {"timezone": "UTC"})
    claude.reply_text("Dat mag ik niet.")
    events = await collect(run_turn(someone, ask(), turn_deps, "fts"))
    assert not [t for t in claude.requests[0]["body"]["tools"] if t["name"].startswith(("time__", "r42demo__"))]
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    assert result["is_error"] is True and "not available" in result["content"]
    assert not [e for e in events if e["type"] == "tool"]
    assert audit_rows(admin_pb, someone, "time__get_current_time") == []


def test_the_demo_shows_external_tools_but_new_tenants_start_without(admin_pb, seeded):
    from r42_app.services.store.kb_store import KBStore

    assert "external_tools" in admin_pb.first("tenants", 'slug = "demo"')["chatbot_default_capabilities"]
    tenant, _ = KBStore(admin_pb).ensure_tenant("mcp-nieuw")
    try:
        assert "external_tools" not in admin_pb.get("tenants", tenant.id)["chatbot_default_capabilities"]
    finally:
        admin_pb.delete("tenants", tenant.id)


async def test_an_idle_connection_stays_up_through_its_checks(monkeypatch):
    """The idle check must not itself drop the connection (the protocol's ping is gone in the SDK)."""
    import r42_app.services.adapters.mcp as mcp_service

    monkeypatch.setattr(mcp_service, "PING_EVERY_S", 0.2)
    registry = McpRegistry()
    hub = McpHub(McpConfig(servers=(McpServerSpec("time", sys.executable,
                                                  ("-m", "mcp_server_time", "--local-timezone", "UTC")),)), registry)
    await hub.start(wait=30)
    try:
        for _ in range(1200):  # until three checks were answered (0.6 s); 60 s only keep a broken one from hanging
            if hub.statuses()[0].checks >= 3:
                break
            await asyncio.sleep(0.05)
        assert hub.statuses()[0].checks >= 3  # several checks, answered
        assert hub.statuses()[0].state == "connected" and hub.statuses()[0].connects == 1
        assert (await registry.get("time__get_current_time").invoke({"timezone": "UTC"}, {})).status == "ok"
    finally:
        await hub.stop()


async def test_a_slow_tool_times_out_and_the_turn_goes_on(someone, claude, indexed, admin_pb):
    """Every call has a timeout: a tool that takes longer answers a structured timeout, never hangs the turn."""
    registry = McpRegistry()
    slow = str(Path(__file__).resolve().parents[1] / "fakes" / "slow_mcp_server.py")
    hub = McpHub(McpConfig(servers=(McpServerSpec("slow", sys.executable, (slow,)),), timeout_s=0.5), registry)
    await hub.start(wait=30)
    try:
        outcome = await registry.get("slow__slow").invoke({"seconds": 3}, {})
        assert outcome.status == "timeout" and json.loads(outcome.content)["status"] == "timeout"
        assert (await registry.get("slow__slow").invoke({"seconds": 0}, {})).status == "ok"  # still connected
    finally:
        await hub.stop()


async def test_a_tool_declared_in_the_config_but_not_provided_is_not_invocable(tmp_path):
    registry = McpRegistry()
    config = McpConfig(servers=(McpServerSpec("time", sys.executable, ("-m", "mcp_server_time", "--local-timezone",
                                                                      "UTC")),),
                       high_risk=frozenset({"time__set_system_clock", "gone__anything"}))
    hub = McpHub(config, registry)
    await hub.start(wait=30)
    try:
        entry = registry.get("time__set_system_clock")
        assert entry is not None and entry.invoke is None and entry.risk == "high"
        assert "does not provide it" in entry.reason and registry.get("gone__anything").invoke is None
    finally:
        await hub.stop()


def test_the_rollback_switch_connects_to_nothing(tmp_path):
    from r42_app.services.store.seed import ensure_mcp_config

    path = tmp_path / "mcp.json"
    ensure_mcp_config(path, tmp_path / "m.jsonl")
    assert len(McpHub.from_file(path, McpRegistry()).connections) == 2
    assert McpHub.from_file(path, McpRegistry(), enabled=False).connections == []
    path.write_text('{"mcpServers": {"bad_name": {"command": "x"}}}')
    broken = McpHub.from_file(path, McpRegistry())
    assert broken.connections == [] and "server name" in broken.config_error


def test_the_registry_feeds_the_tool_registry_under_external_tools_unless_switched_off(monkeypatch, app_env):
    from r42_app import container
    from r42_app.container import services
    from r42_app.services.adapters.mcp import DEFAULT_REGISTRY, register_mcp_tool_for_chatbot

    with pytest.raises(ValueError):
        register_mcp_tool_for_chatbot("bad name", "x", None)
    with pytest.raises(ValueError):
        register_mcp_tool_for_chatbot("crm__x", "x", None, risk="medium")
    register_mcp_tool_for_chatbot("crm__lookup", "Look a customer up.", None, invoke=None, risk="low")
    try:
        offered = {t.name: t for t in services().tools.offered({EXTERNAL_TOOLS})}
        assert list(offered) == ["crm__lookup"] and offered["crm__lookup"].spec.risk == "low"
        assert services().tools.offered({"qa_help", "kb_search"})[0].name == "lookup_topic"
        monkeypatch.setenv("R42_MCP_ENABLED", "false")
        container.use(None)
        assert services().tools.offered({EXTERNAL_TOOLS}) == []
    finally:
        DEFAULT_REGISTRY.clear()
        container.use(None)
