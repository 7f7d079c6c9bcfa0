"""The question log in PocketBase (collection `question_log`, pb_migrations/1764401300_r42_question_log.js).

Chat turns write it through a group commit (one batch request for the turns that end together, off the event
loop); the worker deletes what is older than the retention (`R42_QUESTION_LOG_DAYS`); `forget` removes one
user's rows (`r42 user forget`). Only the app's superuser connection writes: the collection's API rules let the
tenant's admins read and nobody else write.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from r42_app.core.questions import QuestionEntry, retention_cutoff, user_key
from r42_app.services.store.group_commit import GroupCommit
from r42_app.services.store.pb import BatchRequest, PocketBase, pb_time, quote

log = logging.getLogger(__name__)
COLLECTION = "question_log"
DELETE_BATCH = 200
PRUNE_INTERVAL_S = 3600.0


class QuestionLog:
    def __init__(self, pb: PocketBase, secret: str):
        self.pb = pb
        self.secret = secret
        self._writer = GroupCommit(pb, COLLECTION)
        self._pending: set[asyncio.Future] = set()

    def user_key(self, tenant_id: str, user_id: str) -> str:
        return user_key(self.secret, tenant_id, user_id)

    def record(self, entry: QuestionEntry) -> None:
        """Store one turn's row (blocking: call it in a thread). A row PocketBase refuses is logged, never raised:
        the log must not fail the answer it describes."""
        try:
            self._writer.create(entry.to_row())
        except Exception as exc:  # noqa: BLE001 - PBError, a refused field: the turn has been answered
            log.warning("the question log refused a row of tenant %s: %s", entry.tenant_id, exc)

    def track(self, future: asyncio.Future) -> None:
        """Keep a writing future until it is done (so `flush` can wait for it)."""
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        """Wait until every row queued from this loop is stored (tests, shutdown)."""
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def rows(self, tenant_id: str, since: datetime | None = None, limit: int = 10_000) -> list[dict]:
        """The tenant's rows, newest first (at most `limit`)."""
        flt = f"tenant = {quote(tenant_id)}"
        if since is not None:
            flt += f" && created >= {quote(pb_time(since))}"
        out: list[dict] = []
        page = 1
        while len(out) < limit:
            items = self.pb.list(COLLECTION, filter=flt, sort="-created,-id", page=page,
                                 per_page=min(1000, limit - len(out))).get("items", [])
            out.extend(items)
            if len(items) < 1000:
                break
            page += 1
        return out

    def _delete_where(self, flt: str) -> int:
        deleted = 0
        while True:
            ids = [r["id"] for r in self.pb.list(COLLECTION, filter=flt, fields="id", per_page=DELETE_BATCH)
                   .get("items", [])]
            if not ids:
                return deleted
            self.pb.batch([BatchRequest.delete(COLLECTION, i) for i in ids])
            deleted += len(ids)

    def prune(self, days: int, now: datetime | None = None) -> int:
        """Delete every row older than `days`; how many went."""
        cutoff = retention_cutoff(now or datetime.now(UTC), days)
        return self._delete_where(f"created < {quote(pb_time(cutoff))}")

    async def prune_forever(self, days: int, interval: float = PRUNE_INTERVAL_S,
                            stop: asyncio.Event | None = None) -> None:
        """`prune` now and then every `interval` seconds, off the event loop, until `stop` (the worker's job)."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                gone = await asyncio.to_thread(self.prune, days)
                if gone:
                    log.info("question log: %d question(s) older than %d days deleted", gone, days)
            except Exception as exc:  # noqa: BLE001 - PocketBase away: the next round tries again
                log.warning("pruning the question log failed: %s", exc)
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval)
            except TimeoutError:
                pass

    def forget(self, tenant_id: str, user_id: str) -> int:
        """Delete every row of one user in one tenant; how many went."""
        key = self.user_key(tenant_id, user_id)
        return self._delete_where(f"tenant = {quote(tenant_id)} && user_key = {quote(key)}")
