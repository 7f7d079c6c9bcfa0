"""SuggestionsState: the admin review queue of learner suggestions (admins of the tenant only)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import reflex as rx

from r42_app.container import services
from r42_app.core.delta import describe_delta
from r42_app.core.messages import msg
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin

log = logging.getLogger(__name__)

FILTERS = ("pending", "approved", "rejected", "all")


@dataclasses.dataclass
class SuggestionRow:
    id: str = ""
    proposer: str = ""
    reason: str = ""
    created: str = ""
    status: str = ""
    reviewer: str = ""
    reviewed_at: str = ""
    note: str = ""
    lines: list[str] = dataclasses.field(default_factory=list)
    invalid: bool = False
    problem: str = ""


def _fetch(tenant) -> tuple:
    """(change marker, every suggestion of the tenant): blocking, run in a thread."""
    store = services().suggestions
    return store.fingerprint(tenant), store.list(tenant)


def _rows(chosen) -> list[SuggestionRow]:
    return [SuggestionRow(s.id, s.user_name, s.reason, _when(s.created), s.status, s.reviewed_by, _when(s.reviewed_at),
                          s.review_note, describe_delta(s.delta), not s.valid, s.problem) for s in chosen]


def _when(stamp: str) -> str:
    return stamp[:16].replace("T", " ") if stamp else ""


class SuggestionsState(AdminPageMixin, rx.State):
    status_filter: str = "pending"
    rows: list[SuggestionRow] = []
    pending_count: int = 0
    _seen: tuple = ()

    async def _refresh(self, user) -> None:
        self._seen, every = await asyncio.to_thread(_fetch, user.tenant)
        self.pending_count = sum(1 for s in every if s.status == "pending")
        chosen = every if self.status_filter == "all" else [s for s in every if s.status == self.status_filter]
        self.rows = await asyncio.to_thread(_rows, chosen)  # reading every stored delta is CPU: off the event loop

    @rx.event
    async def load(self):
        user = await self._admin()
        if user is None:
            return
        await self._reload(user, "suggestions.load_failed")

    @rx.event
    async def poll(self, _tick: str = ""):
        """Every few seconds while the page is open: reload when a suggestion was filed or decided
        anywhere (another admin, another machine, a learner's chat)."""
        user = await self._admin()
        if user is None:
            return
        tenant = user.tenant
        try:
            if await asyncio.to_thread(services().suggestions.fingerprint, tenant) != self._seen:
                await self._refresh(user)
                self.load_error = ""
        except PBError as exc:
            log.warning("suggestions refresh failed: %s", exc)

    @rx.event
    async def set_filter(self, value: str | list[str]):
        self.status_filter = value if isinstance(value, str) and value in FILTERS else "pending"
        user = await self._admin()
        if user is not None:
            await self._refresh(user)

    async def _decide(self, suggestion_id: str, approve: bool):
        user = await self._admin(fresh=True)
        if user is None:
            return rx.toast.error(msg("suggestions.refused"))
        tenant = user.tenant
        store = services().suggestions
        try:
            if approve:
                applied = await asyncio.to_thread(store.approve, tenant, suggestion_id, user.id)
                done = msg("suggestions.approved", topics=len(applied.topics), relations=len(applied.relations))
            else:
                await asyncio.to_thread(store.reject, tenant, suggestion_id, user.id)
                done = msg("suggestions.rejected")
        except KBError as exc:
            log.info("suggestion %s not decided: %s", suggestion_id, exc)
            await self._refresh(user)
            return rx.toast.error(exc.user_message)
        except PBError as exc:
            log.error("deciding suggestion %s failed: %s", suggestion_id, exc)
            await self._refresh(user)
            return rx.toast.error(msg("suggestions.decide_failed"))
        await self._refresh(user)
        return rx.toast.success(done)

    @rx.event
    async def approve(self, suggestion_id: str):
        return await self._decide(suggestion_id, True)

    @rx.event
    async def reject(self, suggestion_id: str):
        return await self._decide(suggestion_id, False)
