"""External (MCP) tools in a turn: every call goes through `wrap_high_risk_execute`, which rate limits
it per user and tool, asks the user first when the tool is high risk, runs it with a timeout, and
writes an audit row whatever happens.

A high-risk call streams a `ConfirmRequired` event (chat/events.py) and waits (at most 5
minutes) for the user's answer: the chat window's Toestaan / Weigeren, or `POST /api/chat/confirm
{"id", "decision": "allow"|"deny"}`. The answer is bound to the user, the tool and the exact
arguments, and used once. It may reach another backend worker than the one running the turn: the
confirmation lives in the workers' shared state (services/runtime/shared_state.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from r42_app.chat.external_runtime import ALLOW, DENY, ExternalRuntime
from r42_app.chat.tools import Tool, ToolResult, TurnContext
from r42_app.core.capabilities import EXTERNAL_TOOLS
from r42_app.core.fence import defuse
from r42_app.core.mcp import (
    arguments_digest,
    not_invocable,
    redact,
)
from r42_app.core.tools import ToolSpec
from r42_app.services.adapters.mcp import McpRegistry, McpToolEntry
from r42_app.services.runtime.shared_state import SharedStateUnavailable

log = logging.getLogger(__name__)

def _result(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def wrap_high_risk_execute(entry: McpToolEntry) -> Callable[[TurnContext, dict[str, Any]], Any]:
    """The handler of one external tool: rate limit, confirmation when high risk, a timed call, an audit row."""

    async def handler(ctx: TurnContext, arguments: dict[str, Any]) -> ToolResult:
        runtime: ExternalRuntime | None = ctx.deps.external
        started = time.perf_counter()
        confirmed_by = ""

        async def done(status: str, content: str, is_error: bool) -> ToolResult:
            if runtime is not None and runtime.audit is not None:
                duration = round((time.perf_counter() - started) * 1000)
                try:
                    await asyncio.to_thread(runtime.audit.write, ctx.tenant.id, ctx.user.id, entry.name,
                                            redact(arguments), status, content, duration, confirmed_by)
                except Exception as exc:  # the call happened; a lost audit row must be loud, not fatal
                    log.error("audit of %s for user %s failed: %s", entry.name, ctx.user.id, exc)
            # the model reads what the tool said as data: no fence or citation of ours can be forged in it
            return ToolResult(defuse(content), is_error=is_error)

        if runtime is None:
            return await done("not-invocable", _result(not_invocable(entry.name, "external tools are off")), True)
        wait = await runtime.limiter.check(f"{ctx.user.id}:{entry.name}")
        if wait > 0:
            return await done("rate_limited", _result({"status": "rate_limited", "tool": entry.name,
                                                        "retry_after_seconds": round(wait, 1)}), True)
        if entry.risk == "high":
            try:
                decision, confirmation = await runtime.broker.ask(ctx, entry.name, arguments)
            except SharedStateUnavailable as exc:  # no one could answer: the model hears why, the user sees it
                log.error("asking to confirm %s failed: %s", entry.name, exc)
                return await done("not-invocable", _result(not_invocable(entry.name, "the confirmation could not "
                                                                         "be asked; try again later")), True)
            bound = (confirmation.user_id == ctx.user.id and confirmation.tool == entry.name
                     and confirmation.digest == arguments_digest(arguments))
            if decision == ALLOW and bound:  # a yes for exactly this user, tool and arguments
                confirmed_by = ctx.user.email
            else:
                reason = ("the user declined" if decision == DENY else "the user did not answer within 5 minutes")
                return await done("declined" if decision == DENY else "expired",
                                  _result({"status": "declined", "tool": entry.name, "reason": reason}), True)
        if entry.invoke is None:
            return await done("not-invocable", _result(not_invocable(entry.name, entry.reason)), True)
        outcome = await entry.invoke(arguments, {"r42/tenant": ctx.tenant.slug, "r42/user": ctx.user.email})
        return await done(outcome.status, outcome.content, outcome.status != "ok")

    return handler


def create_mcp_external_tools_provider(registry: McpRegistry) -> Callable[[], Iterable[Tool]]:
    """A tool-registry provider: the MCP registry's tools, under capability `external_tools`, each
    wrapped by `wrap_high_risk_execute` (asked again at every turn, so reconnected servers count)."""

    def provide() -> list[Tool]:
        return [Tool(ToolSpec(e.name, e.description[:1024], e.input_schema, EXTERNAL_TOOLS, e.risk),
                     wrap_high_risk_execute(e)) for e in registry.entries()]

    return provide
