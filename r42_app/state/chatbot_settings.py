"""ChatbotSettingsState: `/admin/chatbot`, where admins decide what R42 may do for whom (their tenant
only). Thin: the rules are in core.capabilities, reads and audited writes in services.access."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import reflex as rx
from reflex.event import EventSpec

from r42_app.container import services
from r42_app.core.capabilities import (
    CAPABILITIES,
    CAPABILITY_LABELS,
    INHERIT,
    OVERRIDE_VALUES,
    AccessRow,
    resolve_capabilities,
    with_override,
)
from r42_app.core.messages import N_, msg
from r42_app.core.text import fold
from r42_app.services.store.access import AccessError, UserAccess
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin
from r42_app.state.focus import focus_if_lost

log = logging.getLogger(__name__)

PAGE_SIZE = 50
SWITCH_ID = "chatbot-enabled"  # the master switch (pages/admin_chatbot.py)


def _focus_switch() -> EventSpec:
    """The switch-off confirmation opens without a trigger of its own: once it closes, the focus goes back to the
    switch (assets/r42.js), not to the top of the page."""
    return focus_if_lost(f"#{SWITCH_ID}")


@dataclasses.dataclass
class AccessUserRow:
    id: str = ""
    name: str = ""
    email: str = ""
    role: str = ""
    legacy: bool = False
    legacy_list: str = ""
    qa_help: str = INHERIT
    kb_search: str = INHERIT
    data_write: str = INHERIT
    external_tools: str = INHERIT
    effective: list[str] = dataclasses.field(default_factory=list)
    changed: bool = False


@dataclasses.dataclass
class ChangeRow:
    when: str = ""
    actor: str = ""
    target: str = ""
    what: str = ""
    before: str = ""
    after: str = ""


def _labels(caps) -> list[str]:
    return [CAPABILITY_LABELS[c] for c in CAPABILITIES if c in caps]


def _refusal(exc: AccessError | PBError) -> str:
    """What the admin is told when a change was not saved (the exception itself goes to the log)."""
    log.warning("chatbot settings not saved: %s", exc)
    return exc.user_message if isinstance(exc, AccessError) else msg("access.save_failed")


class ChatbotSettingsState(AdminPageMixin, rx.State):
    saving: bool = False
    enabled: bool = True
    question_log: bool = True  # the tenant keeps the pseudonymous question log (the knowledge-gaps report)
    question_log_days: int = 90  # R42_QUESTION_LOG_DAYS
    confirm_off: bool = False
    default: list[str] = []
    query: str = ""
    shown: int = PAGE_SIZE
    rows: list[AccessUserRow] = []
    matching: int = 0
    total: int = 0
    pending: int = 0
    changes: list[ChangeRow] = []
    _users: list[UserAccess] = []
    _edits: dict[str, AccessRow] = {}  # user id -> the row as edited on this page, not yet saved

    # -- reading -------------------------------------------------------------------------------

    async def _refresh(self, user) -> None:
        store = services().access
        chatbot, users, changes = await asyncio.gather(
            asyncio.to_thread(store.tenant_chatbot, user.tenant_id), asyncio.to_thread(store.users, user.tenant),
            asyncio.to_thread(store.recent_changes, user.tenant))
        self.enabled = chatbot.enabled
        self.question_log = chatbot.question_log
        self.question_log_days = services().settings.question_log_days
        self.default = [c for c in CAPABILITIES if c in chatbot.default]
        self._users, self._edits = users, {}
        self.changes = [ChangeRow(c.when.replace("T", " "), c.actor, c.target, c.what, c.before, c.after)
                        for c in changes]
        self._rebuild()

    def _row(self, u: UserAccess) -> AccessUserRow:
        row = self._edits.get(u.id, u.row)
        overrides = dict(row.overrides) if row and not row.is_legacy else {}
        effective = resolve_capabilities(self.default, row)
        return AccessUserRow(u.id, u.name, u.email, N_("Beheerder") if u.role == "admin" else N_("Deelnemer"),
                             bool(row and row.is_legacy),
                             ", ".join(_labels(row.capability_scopes)) if row and row.is_legacy else "",
                             effective=_labels(effective), changed=u.id in self._edits,
                             **{c: overrides.get(c, INHERIT) for c in CAPABILITIES})

    def _rebuild(self) -> None:
        q = fold(self.query).strip()
        hits = [u for u in self._users if not q or q in fold(u.name) or q in fold(u.email)]
        self.matching, self.total, self.pending = len(hits), len(self._users), len(self._edits)
        self.rows = [self._row(u) for u in hits[: self.shown]]

    @rx.event
    async def load(self):
        """on_load of `/admin/chatbot`."""
        user = await self._admin()
        if user is None:
            return
        self.loading, self.load_error, self.query, self.shown, self.confirm_off = True, "", "", PAGE_SIZE, False
        yield
        await self._reload(user, "access.load_failed")

    @rx.event
    def set_query(self, value: str):
        self.query, self.shown = str(value)[:200], PAGE_SIZE
        self._rebuild()

    @rx.event
    def show_more(self):
        self.shown += PAGE_SIZE
        self._rebuild()

    # -- editing (saved with one button) -------------------------------------------------------------

    @rx.event
    def change(self, user_id: str, capability: str, value: str):
        """A dropdown changed: keep the edit on this page (and show its effect) until Save."""
        target = next((u for u in self._users if u.id == user_id), None)
        if target is None or capability not in CAPABILITIES or value not in OVERRIDE_VALUES:
            return
        base = self._edits.get(user_id, target.row)
        self._edits = {**self._edits, user_id: with_override(base, self.default, capability, value)}
        self._rebuild()

    @rx.event
    def discard(self):
        self._edits = {}
        self._rebuild()

    @rx.event
    async def save(self):
        """Write every edited row (overrides + their projection) in one batch, refused when a row
        changed since this page read it."""
        user = await self._admin(fresh=True)
        if user is None:
            yield rx.toast.error(msg("access.refused"))
            return
        if not self._edits:
            return
        seen = {u.id: (u.row.updated if u.row else "") for u in self._users}
        changes = {uid: (seen.get(uid, ""), row) for uid, row in self._edits.items()}
        self.saving = True
        yield
        try:
            count = await asyncio.to_thread(services().access.save_rows, user.tenant, changes, user.id, user.email)
        except (AccessError, PBError) as exc:
            self.saving = False
            yield rx.toast.error(_refusal(exc))
            return
        await self._refresh(user)
        self.saving = False
        yield rx.toast.success(msg("access.saved", count=count))

    @rx.event
    async def convert(self, user_id: str):
        """"Omzetten": a legacy exact list becomes overrides with the same effective set (saved now)."""
        user = await self._admin(fresh=True)
        if user is None:
            return rx.toast.error(msg("access.refused"))
        try:
            done = await asyncio.to_thread(services().access.migrate_legacy, user.tenant, [user_id], user.id,
                                           user.email)
        except (AccessError, PBError) as exc:
            return rx.toast.error(_refusal(exc))
        await self._refresh(user)
        if done:
            return rx.toast.success(msg("access.converted", email=done[0][0].email))

    # -- tenant-wide ---------------------------------------------------------------------------------

    @rx.event
    async def toggle_default(self, capability: str, on: bool):
        """A checkbox of the tenant default: saved at once (every user on Standaard follows)."""
        user = await self._admin(fresh=True)
        if user is None:
            return rx.toast.error(msg("access.refused"))
        if capability not in CAPABILITIES:
            return
        wanted = (set(self.default) | {capability}) if on else (set(self.default) - {capability})
        try:
            await asyncio.to_thread(services().access.set_default, user.tenant, wanted, user.id, user.email)
        except (AccessError, PBError) as exc:
            return rx.toast.error(_refusal(exc))
        await self._refresh(user)
        return rx.toast.success(msg("access.default_saved"))

    @rx.event
    async def switch(self, on: bool):
        """The master switch: switching off asks first (see `confirm_switch_off`)."""
        if not on:
            self.confirm_off = True
            return
        return await self._set_enabled(True)

    @rx.event
    async def confirm_switch_off(self):
        self.confirm_off = False
        # the dialog opened without a trigger of its own, so closing it leaves the focus nowhere: back on the switch
        return [await self._set_enabled(False), _focus_switch()]

    @rx.event
    def dialog_open(self, is_open: bool):
        """Esc or a click outside closes the confirmation without switching off."""
        was_open, self.confirm_off = self.confirm_off, bool(is_open) and self.confirm_off
        return _focus_switch() if was_open and not self.confirm_off else None  # after "Uitzetten": confirm_switch_off

    @rx.event
    async def switch_question_log(self, on: bool):
        """The question log on or off for the tenant (`r42 chatbot question-log on|off` does the same)."""
        user = await self._admin(fresh=True)
        if user is None:
            return rx.toast.error(msg("access.refused"))
        try:
            await asyncio.to_thread(services().access.set_question_log, user.tenant, bool(on), user.id, user.email)
        except (AccessError, PBError) as exc:
            return rx.toast.error(_refusal(exc))
        await self._refresh(user)
        return rx.toast.success(msg("access.question_log_on" if on else "access.question_log_off"))

    async def _set_enabled(self, on: bool):
        user = await self._admin(fresh=True)
        if user is None:
            return rx.toast.error(msg("access.refused"))
        try:
            await asyncio.to_thread(services().access.set_enabled, user.tenant, on, user.id, user.email)
        except (AccessError, PBError) as exc:
            return rx.toast.error(_refusal(exc))
        await self._refresh(user)
        return rx.toast.success(msg("access.enabled" if on else "access.disabled"))
