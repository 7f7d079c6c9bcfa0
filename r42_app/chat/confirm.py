"""Confirming a proposed graph edit (the `delta` event of a turn): one path for the chat window and
`POST /api/chat/delta`. The server decides what "yes" means by the user's role as it is now: an
admin's edit is applied at once, a learner's becomes a pending suggestion. Both need `data_write`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from r42_app.chat.turn import ChatDeps, check_turn
from r42_app.core.capabilities import DATA_WRITE
from r42_app.core.delta import GraphSnapshot, Rejected, validate_delta
from r42_app.core.errors import UserError
from r42_app.core.identity import SignedInUser
from r42_app.core.messages import msg
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError

log = logging.getLogger(__name__)


class DeltaNotApplied(UserError):
    """The edit cannot be applied or filed (no longer fits the KB, too many open suggestions, PocketBase
    refused); `user_message` says why."""


@dataclass(frozen=True)
class DeltaOutcome:
    state: str  # "applied" | "suggested"
    message: str
    topics: int
    relations: int

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.state, "message": self.message, "topics": self.topics, "relations": self.relations}


async def confirm_delta(user: SignedInUser | None, delta: Any, deps: ChatDeps) -> DeltaOutcome:
    """Apply (admin) or file as a suggestion (learner) a proposed edit, after the guard (R42 on, the
    `data_write` capability, no quiz). Raises ChatRefused or DeltaNotApplied."""
    permit = await check_turn(user, deps, need=DATA_WRITE, rate_limit=False)
    tenant = permit.user.tenant
    try:
        if permit.user.is_admin:
            applied = await asyncio.to_thread(deps.kb.apply_delta, tenant, delta)
            topics, relations = len(applied.topics), len(applied.relations)
            return DeltaOutcome("applied", msg("delta.applied", topics=topics, relations=relations), topics,
                                relations)
        if deps.suggestions is None:
            raise DeltaNotApplied("delta.no_suggestions", "no suggestion store")
        kb = await asyncio.to_thread(deps.kb.load, tenant)
        checked = validate_delta(delta, GraphSnapshot(kb.topics, kb.relations))
        if isinstance(checked, Rejected):
            raise DeltaNotApplied("kb.delta_stale", f"the edit no longer fits: {checked.message}")
        await asyncio.to_thread(deps.suggestions.append_suggestion, tenant, permit.user.id, checked)
        return DeltaOutcome("suggested", msg("delta.suggested"), len(checked.topics), len(checked.relations))
    except KBError as exc:
        raise DeltaNotApplied(exc.code, str(exc), **exc.fields) from exc
    except PBError as exc:
        log.error("filing or applying an edit for user %s failed: %s", permit.user.id, exc)
        raise DeltaNotApplied("delta.not_saved", str(exc)) from exc
