"""External (MCP) tools in a turn: every call goes through `wrap_high_risk_execute`, which rate limits
it per user and tool, asks the user first when the tool is high risk, runs it with a timeout, and
writes an audit row whatever happens.

A high-risk call streams a `ConfirmRequired` event (chat/events.py) and waits (at most 5
minutes) for the user's answer: the chat window's Toestaan / Weigeren, or `POST /api/chat/confirm
{"id", "decision": "allow"|"deny"}`. The answer is bound to the user, the tool and the exact
arguments, and used once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from r42_app.chat import events
from r42_app.chat.tools import Tool, ToolResult, TurnContext
from r42_app.core.capabilities import EXTERNAL_TOOLS
from r42_app.core.fence import defuse
from r42_app.core.mcp import (
    CONFIRM_TTL_S,
    Confirmation,
    ConfirmationBook,
    ConfirmationError,
    arguments_digest,
    not_invocable,
    redact,
)
from r42_app.core.ratelimit import RateLimiter
from r42_app.core.tools import ToolSpec
from r42_app.services.adapters.mcp import McpRegistry, McpToolEntry
from r42_app.services.store.audit import ToolAudit

log = logging.getLogger(__name__)

ALLOW, DENY = "allow", "deny"


class ConfirmationBroker:
    """Pending confirmations of this process: a turn waits on one, the user's answer resolves it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl: float = CONFIRM_TTL_S):
        self.book = ConfirmationBook(clock, ttl)
        self.ttl = ttl
        self._waiting: dict[str, tuple[asyncio.Future, Confirmation]] = {}

    async def ask(self, ctx: TurnContext, tool: str, arguments: dict[str, Any]) -> tuple[str, Confirmation]:
        """Stream the question and wait for the answer: (allow | deny | expired, the confirmation)."""
        confirmation = self.book.issue(ctx.user.id, tool, arguments)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting[confirmation.id] = (future, confirmation)
        try:
            await ctx.emit(events.ConfirmRequired(confirmation.id, tool, arguments))
            return await asyncio.wait_for(future, self.ttl), confirmation
        except asyncio.TimeoutError:
            return "expired", confirmation
        finally:
            self._waiting.pop(confirmation.id, None)

    def answer(self, confirmation_id: str, user_id: str, decision: str) -> None:
        """The user's Toestaan / Weigeren: uses the confirmation (once) and wakes the waiting call. Raises
        ConfirmationError (unknown, other user, expired, used)."""
        if decision not in (ALLOW, DENY):
            raise ConfirmationError("unknown", "Antwoord met allow of deny.")
        self.book.redeem(confirmation_id, user_id)
        waiting = self._waiting.get(confirmation_id)
        if waiting is None or waiting[0].done():
            raise ConfirmationError("unknown", "Op deze bevestiging wacht niets meer.")
        waiting[0].set_result(decision)


@dataclass
class ExternalRuntime:
    """What every external call needs, shared by the turns of a process."""

    audit: ToolAudit | None
    limiter: RateLimiter
    broker: ConfirmationBroker = field(default_factory=ConfirmationBroker)


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
        wait = runtime.limiter.check(f"{ctx.user.id}:{entry.name}")
        if inspect.isawaitable(wait):  # several workers: the limit is shared in Redis
            wait = await wait
        if wait > 0:
            return await done("rate_limited", _result({"status": "rate_limited", "tool": entry.name,
                                                        "retry_after_seconds": round(wait, 1)}), True)
        if entry.risk == "high":
            decision, confirmation = await runtime.broker.ask(ctx, entry.name, arguments)
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
