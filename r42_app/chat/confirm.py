"""Confirming a proposed graph edit (the `delta` event of a turn): one path for the chat window and
`POST /api/chat/delta`. The server decides what "yes" means by the user's role as it is now: an
admin's edit is applied at once, a learner's becomes a pending suggestion. Both need `data_write`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from r42_app.chat.turn import ChatDeps, check_turn
from r42_app.core.capabilities import DATA_WRITE
from r42_app.core.delta import GraphSnapshot, Rejected, validate_delta
from r42_app.core.identity import SignedInUser
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError


class DeltaNotApplied(Exception):
    """The edit cannot be applied or filed (no longer fits the KB, too many open suggestions, PocketBase
    refused); the message says why, in Dutch."""


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
            return DeltaOutcome("applied", f"Toegevoegd: {len(applied.topics)} onderwerp(en), "
                                           f"{len(applied.relations)} relatie(s).", len(applied.topics),
                                len(applied.relations))
        if deps.suggestions is None:
            raise DeltaNotApplied("Voorstellen kunnen nu niet worden opgeslagen.")
        kb = await asyncio.to_thread(deps.kb.load, tenant)
        checked = validate_delta(delta, GraphSnapshot(kb.topics, kb.relations))
        if isinstance(checked, Rejected):
            raise DeltaNotApplied(f"Dit voorstel past niet meer: {checked.message}")
        await asyncio.to_thread(deps.suggestions.append_suggestion, tenant, permit.user.id, checked)
        return DeltaOutcome("suggested", "Voorgelegd aan de beheerders van je organisatie.", len(checked.topics),
                            len(checked.relations))
    except (KBError, PBError) as exc:
        raise DeltaNotApplied(str(exc)) from exc
