"""Creates from many threads in as few PocketBase requests as they can share (issue 26: every chat turn wrote its
cost outbox row in a request of its own, a twelfth of a turn's CPU under load).

Group commit: a caller queues its row and takes the writer's lock; whoever holds it writes everything queued so
far in one batch request (all or nothing), so while one batch is on its way the next callers' rows gather for
the one after. Nobody waits for a timer: one turn alone is written at once, as before, and each caller returns
only once its own row is stored (or raises as a create of its own would). A batch PocketBase refuses is tried
again row by row, so one bad row costs only itself.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PocketBase

MAX_BATCH = BULK_BATCH  # rows in one request (services/store/pb.py says why not more)


class GroupCommit:
    def __init__(self, pb: PocketBase, collection: str, max_batch: int = MAX_BATCH):
        self.pb = pb
        self.collection = collection
        self.max_batch = max_batch
        self._queue: list[tuple[dict[str, Any], Future]] = []
        self._queue_lock = threading.Lock()
        self._writer = threading.Lock()
        self.requests = 0  # batch or single requests sent (the tests and the bench read it)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Store one row (blocking, as PocketBase.create); its stored record comes back."""
        done: Future = Future()
        with self._queue_lock:
            self._queue.append((body, done))
        while not done.done():
            with self._writer:
                if done.done():  # the batch of the one before us held it
                    break
                with self._queue_lock:
                    batch, self._queue = self._queue[:self.max_batch], self._queue[self.max_batch:]
                self._write(batch)
        return done.result()

    def _write(self, batch: list[tuple[dict[str, Any], Future]]) -> None:
        if not batch:
            return
        for (_, done), stored in zip(batch, self.write_many([body for body, _ in batch]), strict=True):
            if isinstance(stored, Exception):
                done.set_exception(stored)
            else:
                done.set_result(stored)

    def write_many(self, bodies: list[dict[str, Any]]) -> Sequence[dict[str, Any] | Exception]:
        """Create the rows in one batch request (one create for one row); a batch PocketBase refuses is tried again
        row by row, so a bad row fails only itself. Each row's stored record, or the exception of its create."""
        if not bodies:
            return []
        try:
            self.requests += 1
            if len(bodies) == 1:
                return [self.pb.create(self.collection, bodies[0])]
            return list(self.pb.batch([BatchRequest.create(self.collection, body) for body in bodies]))
        except Exception as exc:  # noqa: BLE001 - handed to the callers, whose create it was
            if len(bodies) == 1:
                return [exc]
            return [self.write_many([body])[0] for body in bodies]
