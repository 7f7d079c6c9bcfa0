"""One outbox consumer loop for every kind of background work (the indexer, the cost persister).

A consumer claims due rows of its types (leased, services/outbox/outbox.py), processes them (`process`,
the subclass's work), and marks them done; a failure is recorded on the row (`attempts`, `last_error`) and
retried with backoff; after MAX_ATTEMPTS the row shows as `failed` and is still retried every hour
(`r42 outbox retry` re-queues failed rows at once).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Generic, TypeVar

from r42_app.services.outbox.outbox import Renewal, claim, held_elsewhere, worker_id
from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PBError, PocketBase, pb_time, quote

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
FAILED_RETRY_S = 3600.0  # a row that failed MAX_ATTEMPTS times is tried again this often
BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 600.0
BATCH = BULK_BATCH  # sub-requests per PocketBase batch (services/store/pb.py says why not more)


def backoff(attempts: int) -> float:
    """Seconds to wait before attempt `attempts + 1`."""
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1))


@dataclasses.dataclass
class RunStats:
    """What one run did; subclasses add their own counts (every field adds up over a drain)."""

    rows: int = 0
    failed_rows: int = 0
    seconds: float = 0.0

    def add(self, other: RunStats) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


Stats = TypeVar("Stats", bound=RunStats)


def requeue_failed(pb: PocketBase, types: tuple[str, ...]) -> int:
    """`failed` outbox rows of these types back to pending, due now, attempts reset (`r42 outbox retry`)."""
    flt = 'status = "failed" && (' + " || ".join(f"type = {quote(t)}" for t in types) + ")"
    rows = pb.all("outbox", filter=flt, fields="id")
    requests = [BatchRequest.update("outbox", r["id"], {"status": "pending", "attempts": 0, "available_at": "",
                                                        "last_error": "", "lease_until": ""}) for r in rows]
    for start in range(0, len(requests), BATCH):
        pb.batch(requests[start:start + BATCH])
    return len(rows)


class OutboxConsumer(Generic[Stats]):
    """The loop; a subclass names its row `types`, its `role`, its `stats` class and does `process(rows)`."""

    types: tuple[str, ...] = ()
    role = "worker"
    stats: type[Stats]
    rows_per_run = 256

    def __init__(self, pb: PocketBase, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 worker: str = ""):
        self.pb = pb
        self.clock = clock
        self.worker = worker or worker_id(self.role)

    # -- what a subclass provides -------------------------------------------------------------

    def process(self, rows: list[dict], progress: Callable[[int], None] | None) -> Stats:
        raise NotImplementedError

    def check_ready(self) -> None:
        """Raise when this consumer cannot take rows now (the indexer: another process writes the index)."""

    async def on_start(self) -> None:
        """Once, before run_forever polls (the indexer checks the index's embedding model)."""

    def describe(self, stats: Stats) -> str:
        return f"{stats.rows} outbox row(s) in {stats.seconds:.2f}s"

    # -- the loop -------------------------------------------------------------------------------

    def pending(self, limit: int | None = None, tenant_id: str | None = None) -> list[dict]:
        """Claim up to `limit` due rows for this consumer. `failed` rows come back too, once their (long) wait is
        over: broken work is retried, not abandoned."""
        return claim(self.pb, self.worker, self.types, limit or self.rows_per_run, tenant_id=tenant_id,
                     now=self.clock())

    def run_once(self, limit: int | None = None, tenant_id: str | None = None,
                 progress: Callable[[int], None] | None = None) -> Stats:
        """Process up to `limit` due rows; returns what was done."""
        started = time.perf_counter()
        self.check_ready()
        rows = self.pending(limit, tenant_id)
        if not rows:
            return self.stats()
        with Renewal(self.pb, rows):
            stats = self.process(rows, progress)
        stats.seconds = time.perf_counter() - started
        return stats

    def drain(self, tenant_id: str | None = None, progress: Callable[[int], None] | None = None,
              wait_for_leases: bool = False) -> Stats:
        """Run until no due row is left (rows waiting for a retry are left for later). With `wait_for_leases`,
        rows another worker holds are waited for too: finished by it, or taken over when its lease ends."""
        total, started = self.stats(), datetime.now(UTC)
        while True:
            stats = self.run_once(tenant_id=tenant_id, progress=progress)
            total.add(stats)
            if stats.rows and stats.rows != stats.failed_rows:
                continue
            if not (wait_for_leases and held_elsewhere(self.pb, self.worker, self.types, tenant_id, since=started)):
                return total
            time.sleep(0.5)

    def finish(self, rows: list[dict]) -> None:
        """Mark rows done (in batches)."""
        requests = [BatchRequest.update("outbox", r["id"], done_body(r)) for r in rows]
        for start in range(0, len(requests), BATCH):
            self.pb.batch(requests[start:start + BATCH])

    def fail(self, rows: list[dict], exc: BaseException, final: bool = False) -> None:
        """Record a failure on the rows: retried with backoff; shown as failed after MAX_ATTEMPTS (and still
        retried hourly). `final`: nothing can ever come of them (their tenant is gone), so they are done."""
        now = self.clock()
        requests = []
        for r in rows:
            attempts = int(r.get("attempts", 0)) + 1
            body: dict = {"attempts": attempts, "last_error": f"{type(exc).__name__}: {exc}"[:2000],
                          "available_at": pb_time(now + timedelta(seconds=backoff(attempts)))}
            if final:
                body.update(status="done", available_at="")
            elif attempts >= MAX_ATTEMPTS:
                body.update(status="failed", available_at=pb_time(now + timedelta(seconds=FAILED_RETRY_S)))
            requests.append(BatchRequest.update("outbox", r["id"], body))
        log.warning("%s: %d outbox row(s) failed: %s", self.role, len(rows), exc)
        try:
            for start in range(0, len(requests), BATCH):
                self.pb.batch(requests[start:start + BATCH])
        except PBError as pb_exc:
            log.error("%s: could not record the failure: %s", self.role, pb_exc)

    async def run_forever(self, interval: float = 1.0, stop: asyncio.Event | None = None) -> None:
        """Poll the outbox (the app backend and `r42 worker` run this). While PocketBase cannot be reached it
        backs off (up to 30 s) and says so once, and once more when it is back."""
        await self.on_start()
        failing = 0
        while stop is None or not stop.is_set():
            try:
                stats = await asyncio.to_thread(self.run_once)
                if failing:
                    log.warning("%s: PocketBase answers again", self.role)
                    failing = 0
                if stats.rows:
                    log.info("%s: %s", self.role, self.describe(stats))
                    continue
            except Exception as exc:  # noqa: BLE001 - PocketBase restarting, etc.: keep the loop alive, quietly
                if not failing:
                    log.warning("%s: %s (retrying with backoff)", self.role, exc)
                failing += 1
            await asyncio.sleep(min(30.0, interval * 2 ** failing) if failing else interval)


def done_body(row: dict) -> dict:
    return {"status": "done", "attempts": int(row.get("attempts", 0)) + 1, "last_error": ""}
