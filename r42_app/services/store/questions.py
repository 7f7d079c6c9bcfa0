"""The question log in PocketBase (collection `question_log`, pb_migrations/1764401300_r42_question_log.js).

Chat turns queue their rows, written once a second in batch requests of BULK_BATCH rows (off the event loop, no
request per turn); the worker deletes what is older than the retention (`R42_QUESTION_LOG_DAYS`); `forget` removes one
user's rows (`r42 user forget`). Only the app's superuser connection writes: the collection's API rules let the
tenant's admins read and nobody else write.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime

from r42_app.core.questions import QuestionEntry, clip_question, retention_cutoff, user_key
from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PBError, PocketBase, pb_time, quote

log = logging.getLogger(__name__)
COLLECTION = "question_log"
DELETE_BATCH = BULK_BATCH
PRUNE_INTERVAL_S = 3600.0
WRITE_INTERVAL_S = 1.0
WRITE_BATCH = BULK_BATCH
MAX_QUEUED = 20_000


class QuestionLog:
    def __init__(self, pb: PocketBase, secret: str):
        self.pb = pb
        self.secret = secret
        self._queue: list[dict] = []
        self._queue_lock = threading.Lock()
        self.dropped = 0  # rows dropped because the queue was full

    def user_key(self, tenant_id: str, user_id: str) -> str:
        return user_key(self.secret, tenant_id, user_id)

    def record(self, entry: QuestionEntry) -> None:
        """Store one row now (blocking: call it in a thread); the chat turns `queue` theirs instead."""
        self.pb.create(COLLECTION, entry.to_row())

    def queue(self, entry: QuestionEntry) -> None:
        """A turn's row, written with the others of the next second in one batch request (`run_forever`, or
        `flush`): no PocketBase request and no thread hop per turn. A row waits at most a second or so; what
        is queued when the process dies is lost (this is the gaps report's log, not a ledger)."""
        row = entry.to_row()  # a bad row fails here, in the turn that made it, never in a batch of others
        with self._queue_lock:
            self._queue.append(row)
            if len(self._queue) > MAX_QUEUED:  # PocketBase away for long: keep the newest
                over = len(self._queue) - MAX_QUEUED
                del self._queue[:over]
                self.dropped += over

    def write_queued(self) -> int:
        """Write what is queued, in batches (blocking); how many rows were stored. A batch PocketBase refuses is
        tried row by row, so one bad row costs only itself; when PocketBase cannot be reached the rows go back."""
        stored = 0
        while True:
            with self._queue_lock:
                batch, self._queue = self._queue[:WRITE_BATCH], self._queue[WRITE_BATCH:]
            if not batch:
                return stored
            try:
                self.pb.batch([BatchRequest.create(COLLECTION, row) for row in batch])
                stored += len(batch)
                continue
            except PBError as exc:
                if exc.status in (0, 429) or exc.status >= 500:  # not the rows' fault: try again later
                    with self._queue_lock:
                        self._queue[:0] = batch
                    raise
            for row in batch:
                try:
                    self.pb.create(COLLECTION, row)
                    stored += 1
                except PBError as exc:
                    log.warning("the question log refused a row of tenant %s: %s", row.get("tenant"), exc)

    async def flush(self) -> None:
        """Write everything queued so far (tests, shutdown)."""
        await asyncio.to_thread(self.write_queued)

    async def run_forever(self, interval: float = WRITE_INTERVAL_S) -> None:
        """Write the queued rows every `interval` seconds, off the event loop; at the end, what is left."""
        try:
            while True:
                await asyncio.sleep(interval)
                if self._queue:
                    try:
                        await asyncio.to_thread(self.write_queued)
                    except PBError as exc:
                        log.warning("writing the question log failed (will retry): %s", exc)
        finally:
            if self._queue:
                try:
                    await asyncio.to_thread(self.write_queued)
                except PBError as exc:
                    log.warning("the question log's last %d row(s) were not written: %s", len(self._queue), exc)

    def set_feedback(self, tenant_id: str, user_id: str, question: str, rating: str) -> bool:
        """A thumbs up or down on an answer, on that question's newest row of this user (the window's messages
        do not carry the turn's id); False when there is none (the log was off, or the row expired)."""
        if rating not in ("up", "down", ""):
            raise ValueError("rating must be up, down or empty")
        key = self.user_key(tenant_id, user_id)
        clipped = clip_question(question)
        with self._queue_lock:  # rated within a second of the answer: the row is not written yet
            for queued in reversed(self._queue):
                if queued["tenant"] == tenant_id and queued["user_key"] == key and queued["question"] == clipped:
                    queued["feedback"] = rating
                    return True
        row = self.pb.first(COLLECTION, f"tenant = {quote(tenant_id)} && user_key = {quote(key)} && "
                                        f"question = {quote(clip_question(question))}", sort="-created,-id")
        if row is None:
            return False
        self.pb.update(COLLECTION, row["id"], {"feedback": rating})
        return True

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
