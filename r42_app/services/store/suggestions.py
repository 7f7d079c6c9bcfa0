"""Learner suggestions: a proposed graph edit waiting in PocketBase for an admin's decision."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from r42_app.core.delta import StoredDeltaError, ValidDelta, read_stored_delta
from r42_app.core.identity import Tenant
from r42_app.core.messages import msg
from r42_app.services.store.kb_store import KBError, KBStore
from r42_app.services.store.pb import PBError, PocketBase, pb_time, quote

MAX_OPEN_SUGGESTIONS = 20  # per user; the same number is in pb_hooks/r42_rules.js
DECIDED = {"approved": "suggestions.already_approved", "rejected": "suggestions.already_rejected"}


@dataclass(frozen=True)
class Suggestion:
    id: str
    user: str
    user_name: str
    reason: str
    delta: dict[str, Any]
    status: str
    created: str
    reviewed_by: str = ""
    reviewed_at: str = ""
    review_note: str = ""
    problem: str = ""  # why the stored delta is unreadable, in Dutch for the queue ("" for a well-formed row)

    @property
    def valid(self) -> bool:
        return not self.problem


def _suggestion(row: dict) -> Suggestion:
    """A row as the queue shows it; a malformed delta becomes an empty one with `problem` set, so one
    bad row never fails a page that lists many."""
    expand = row.get("expand") or {}
    proposer = expand.get("user") or {}
    reviewer = expand.get("reviewed_by") or {}
    try:
        delta, problem = read_stored_delta(row.get("delta")), ""
        if not delta["topics"] and not delta["relations"]:
            problem = msg("suggestions.adds_nothing")
    except StoredDeltaError as exc:
        delta, problem = {"reason": "", "topics": [], "relations": []}, exc.user_message
    proposed_by = proposer.get("name") or proposer.get("email", "") or ("" if row.get("user") else
                                                                        msg("suggestions.anonymous"))
    return Suggestion(row["id"], row.get("user", ""), proposed_by,
                      str(row.get("reason") or ""), delta, row.get("status", ""), row.get("created", ""),
                      reviewer.get("name") or reviewer.get("email", ""), row.get("reviewed_at", ""),
                      str(row.get("review_note") or ""), problem)


class SuggestionStore:
    """Reads and writes `suggestions` with a superuser connection; callers check roles first."""

    def __init__(self, pb: PocketBase, kb: KBStore):
        self.pb = pb
        self.kb = kb

    def append_suggestion(self, tenant: Tenant, user_id: str, delta: ValidDelta) -> Suggestion:
        """Queue a validated edit as a pending suggestion of this user (at most MAX_OPEN_SUGGESTIONS open;
        PocketBase enforces the same cap for every writer)."""
        open_now = self.pb.list("suggestions", filter=f'user = {quote(user_id)} && status = "pending"', fields="id",
                                per_page=1, total=True).get("totalItems", 0)
        if open_now >= MAX_OPEN_SUGGESTIONS:
            raise KBError("suggestions.too_many_open", f"{MAX_OPEN_SUGGESTIONS} suggestions are open already",
                          count=MAX_OPEN_SUGGESTIONS)
        row = self.pb.create("suggestions", {"tenant": tenant.id, "user": user_id, "delta": delta.as_dict(),
                                             "reason": delta.reason, "status": "pending"})
        return _suggestion(row)

    def list(self, tenant: Tenant, status: str = "") -> list[Suggestion]:
        flt = f"tenant = {quote(tenant.id)}" + (f" && status = {quote(status)}" if status else "")
        return [_suggestion(r) for r in self.pb.all("suggestions", filter=flt, sort="-created",
                                                    expand="user,reviewed_by")]

    def fingerprint(self, tenant: Tenant) -> tuple:
        """Changes whenever a suggestion of the tenant is filed or decided (one cheap query)."""
        return self.pb.change_marker("suggestions", f"tenant = {quote(tenant.id)}")

    def _pending(self, tenant: Tenant, suggestion_id: str) -> dict:
        try:
            row = self.pb.get("suggestions", suggestion_id)
        except PBError as exc:
            raise KBError("suggestions.not_found", f"no suggestion {suggestion_id}") from exc
        if row.get("tenant") != tenant.id:
            raise KBError("suggestions.not_found", f"no suggestion {suggestion_id} in this tenant")
        if row.get("status") != "pending":
            raise KBError(DECIDED.get(row.get("status", ""), "suggestions.already_decided"),
                          f"the suggestion is {row.get('status')} already")
        return row

    def approve(self, tenant: Tenant, suggestion_id: str, reviewer_id: str) -> ValidDelta:
        """Re-validate against the KB as it is now and apply; approving twice applies once."""
        row = self._pending(tenant, suggestion_id)
        suggestion = _suggestion(row)
        if not suggestion.valid:
            raise KBError("suggestions.invalid", "an unreadable suggestion can only be rejected",
                          problem=suggestion.problem)
        applied = self.kb.apply_delta(tenant, suggestion.delta)
        self._review(suggestion_id, "approved", reviewer_id)
        return applied

    def reject(self, tenant: Tenant, suggestion_id: str, reviewer_id: str, note: str = "") -> None:
        self._pending(tenant, suggestion_id)
        self._review(suggestion_id, "rejected", reviewer_id, note)

    def _review(self, suggestion_id: str, status: str, reviewer_id: str, note: str = "") -> None:
        now = pb_time(datetime.now(UTC))
        self.pb.update("suggestions", suggestion_id, {"status": status, "reviewed_by": reviewer_id,
                                                      "reviewed_at": now, "review_note": note[:1000]})
