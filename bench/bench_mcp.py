"""External tools over MCP: a call through `wrap_high_risk_execute` (rate limit, timed call, audit row in
PocketBase) against a direct SDK call on the same connection; and how long boot takes with three servers."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from bench.common import ms, p50, p95, pocketbase
from r42_app.chat.external import wrap_high_risk_execute
from r42_app.chat.external_runtime import ExternalRuntime
from r42_app.chat.tools import TurnContext
from r42_app.core.identity import SignedInUser
from r42_app.core.mcp import McpConfig, McpServerSpec
from r42_app.services.adapters.mcp import McpHub, McpRegistry
from r42_app.services.runtime.shared_state import MemorySharedState, SharedRateLimiter
from r42_app.services.store.audit import ToolAudit
from r42_app.services.store.kb_store import KBStore

CALLS = 200
BOOTS = 5
TIME = McpServerSpec("time", sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC"))


def _three(tmp: Path) -> McpConfig:
    r42 = str(Path(sys.executable).parent / "r42")
    return McpConfig(servers=(TIME, McpServerSpec("time2", TIME.command, TIME.args),
                              McpServerSpec("r42demo", r42, ("mcp", "demo-server"),
                                            {"R42_MCP_DEMO_MESSAGES": str(tmp / "m.jsonl")})))


class _Deps:
    def __init__(self, external: ExternalRuntime):
        self.external = external


async def _calls(pb) -> tuple[list[float], list[float]]:
    kb = KBStore(pb)
    tenant, _ = kb.ensure_tenant("mcp-bench")
    user = pb.create("users", {"email": "mcp@bench.example", "password": "bench-pass-1", "passwordConfirm": "bench-pass-1",
                               "name": "Mcp Bench", "role": "learner", "tenant": tenant.id, "verified": True})
    signed_in = SignedInUser(user["id"], user["email"], "Mcp Bench", "learner", tenant.id, tenant.slug, tenant.name)
    registry = McpRegistry()
    hub = McpHub(McpConfig(servers=(TIME,)), registry)
    await hub.start(wait=30)
    try:
        entry = registry.get("time__get_current_time")
        tool_limit = SharedRateLimiter(MemorySharedState(), "tool", per_minute=100_000, burst=100_000)
        runtime = ExternalRuntime(ToolAudit(pb), tool_limit)
        ctx = TurnContext(signed_in, tenant, frozenset({"external_tools"}), _Deps(runtime))
        handler = wrap_high_risk_execute(entry)
        client = hub.connections[0]._client  # the same connection, called directly with the SDK
        direct, wrapped = [], []
        for i in range(CALLS + 10):
            started = time.perf_counter()
            await client.call_tool("get_current_time", {"timezone": "UTC"})
            d = time.perf_counter() - started
            started = time.perf_counter()
            result = await handler(ctx, {"timezone": "UTC"})
            w = time.perf_counter() - started
            assert not result.is_error, result.content
            if i >= 10:
                direct.append(d)
                wrapped.append(w)
    finally:
        await hub.stop()
    return direct, wrapped


async def _boots(tmp: Path) -> list[float]:
    times = []
    for _ in range(BOOTS):
        hub = McpHub(_three(tmp), McpRegistry())
        took = await hub.start(wait=60)
        assert all(s.state == "connected" for s in hub.statuses()), hub.statuses()
        times.append(took)
        await hub.stop()
    return times


def run() -> str:
    with pocketbase() as (pb, data):
        direct, wrapped = asyncio.run(_calls(pb))
        boots = asyncio.run(_boots(data))
    overhead = [w - d for w, d in zip(wrapped, direct)]
    return "\n".join([
        f"### An external tool call ({CALLS} calls of `time__get_current_time`, stdio, low risk)",
        "",
        "| path | p50 | p95 |",
        "|---|---|---|",
        f"| direct SDK `call_tool` on the connection | {ms(p50(direct))} | {ms(p95(direct))} |",
        f"| through `wrap_high_risk_execute` (rate limit, timed call, audit row written to PocketBase) | "
        f"{ms(p50(wrapped))} | {ms(p95(wrapped))} |",
        f"| overhead per call | {ms(p50(overhead))} | {ms(p95(overhead))} |",
        "",
        f"### Boot with three MCP servers (two `mcp-server-time`, `r42 mcp demo-server`; {BOOTS} boots)",
        "",
        f"| until all three are connected | p50 {statistics.median(boots):.2f} s | max {max(boots):.2f} s |",
        "|---|---|---|",
    ])
