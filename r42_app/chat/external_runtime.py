"""What every external (MCP) tool call of a process shares (chat/external.py makes the calls): the rate limit, the
audit, and the broker of confirmations of high-risk calls, which lives in the workers' shared state. Its own module,
importing nothing of the chat turn, so that the turn's dependencies (chat/tools.py ToolDeps, chat/turn.py ChatDeps)
name its type without an import circle."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from r42_app.chat import events
from r42_app.core.identity import SignedInUser
from r42_app.core.mcp import CONFIRM_TTL_S, Confirmation, ConfirmationError
from r42_app.core.ratelimit import Limiter
from r42_app.services.runtime.shared_state import MemorySharedState, SharedState, SharedStateUnavailable
from r42_app.services.store.audit import ToolAudit

log = logging.getLogger(__name__)


class Asking(Protocol):
    """Who asks for a confirmation, and where its question streams (a turn's TurnContext)."""

    @property
    def user(self) -> SignedInUser: ...

    @property
    def emit(self) -> Callable[[events.ChatEvent], Awaitable[None]]: ...


ALLOW, DENY = "allow", "deny"


class ConfirmationBroker:
    """Confirmations of high-risk calls, in the workers' shared state: a turn waits for one in the worker that
    runs it, and the user's answer may reach any worker (several workers: through their Redis)."""

    def __init__(self, shared: SharedState | None = None, ttl: float = CONFIRM_TTL_S):
        self.shared = shared if shared is not None else MemorySharedState()
        self.ttl = ttl

    async def ask(self, ctx: Asking, tool: str, arguments: dict[str, Any]) -> tuple[str, Confirmation]:
        """Stream the question and wait for the answer: (allow | deny | expired, the confirmation). Raises
        SharedStateUnavailable when the question cannot be put."""
        confirmation = await self.shared.put_confirmation(ctx.user.id, tool, arguments, self.ttl)
        try:
            await ctx.emit(events.ConfirmRequired(confirmation.id, tool, arguments))
            decision = await self.shared.wait_confirmation(confirmation.id, self.ttl)
            return decision or "expired", confirmation
        finally:
            await self.shared.cancel_confirmation(confirmation.id)

    async def answer(self, confirmation_id: str, user_id: str, decision: str) -> None:
        """The user's Toestaan / Weigeren, from any worker: uses the confirmation (once) and wakes the waiting
        call. Raises ConfirmationError (unknown, other user, expired, used; unavailable while the shared state
        cannot be reached)."""
        if decision not in (ALLOW, DENY):
            raise ConfirmationError("unknown", "the decision must be allow or deny")
        try:
            await self.shared.answer_confirmation(confirmation_id, user_id, decision)
        except SharedStateUnavailable as exc:
            log.error("answering confirmation %s… failed: %s", confirmation_id[:6], exc)
            raise ConfirmationError("unavailable", "the workers' shared state cannot be reached") from exc


@dataclass
class ExternalRuntime:
    """What every external call needs, shared by the turns of a process."""

    audit: ToolAudit | None
    limiter: Limiter
    broker: ConfirmationBroker = field(default_factory=ConfirmationBroker)
