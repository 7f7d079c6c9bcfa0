"""Quiz sessions in PocketBase: the server-side truth of the quiz lock on chat.

A row is active from the quiz's start until it ends (result, leaving the page, sign-out, tab close)
or until it expires (QUIZ_MAX_MINUTES), whichever comes first. Only the superuser connection writes
these rows; users may read their own (API rules in pb_migrations/).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from r42_app.core.identity import Tenant
from r42_app.core.quiz import QUIZ_MAX_MINUTES, expires_at
from r42_app.services.store.pb import PBError, PocketBase, pb_time, quote


class QuizStore:
    def __init__(self, pb: PocketBase, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 minutes: int = QUIZ_MAX_MINUTES):
        self.pb = pb
        self.clock = clock
        self.minutes = minutes

    def _open_rows(self, user_id: str) -> list[dict]:
        return self.pb.all("quiz_sessions", filter=f"user = {quote(user_id)} && active = true")

    def start(self, tenant: Tenant, user_id: str) -> str:
        """Open a quiz session for the user (ending any earlier one) and return its id."""
        self.end(user_id)
        now = self.clock()
        row = self.pb.create("quiz_sessions", {"tenant": tenant.id, "user": user_id, "active": True,
                                               "started": pb_time(now),
                                               "expires": pb_time(expires_at(now, self.minutes))})
        return row["id"]

    def end(self, user_id: str) -> int:
        """End every open quiz session of the user; how many were open."""
        rows = self._open_rows(user_id)
        now = pb_time(self.clock())
        for row in rows:
            self.pb.update("quiz_sessions", row["id"], {"active": False, "ended": now})
        return len(rows)

    def attempt_status(self, user_id: str, session_id: str) -> str:
        """"open" while this attempt's session is active and not expired, else "ended" or "expired".
        The quiz tab asks before it accepts each answer, so ending the session (by any path: another
        tab, sign-out, POST /api/quiz/end) ends the attempt too."""
        try:
            row = self.pb.get("quiz_sessions", session_id) if session_id else None
        except PBError as exc:
            if exc.status != 404:
                raise
            row = None
        if row is None or row.get("user") != user_id or not row.get("active"):
            return "ended"
        return "open" if row.get("expires", "") > pb_time(self.clock()) else "expired"

    def active(self, user_id: str) -> bool:
        """True while the user has a quiz session that is active and not expired (locks chat)."""
        flt = f"user = {quote(user_id)} && active = true && expires > {quote(pb_time(self.clock()))}"
        return self.pb.first("quiz_sessions", flt) is not None
