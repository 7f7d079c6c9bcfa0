"""Leased claims on outbox rows, so several consumers (app backends, `r42 worker` processes, on one
machine or several) never work on the same row at once.

PocketBase's REST API has no compare-and-set. The claim is a route of our own in
`pb_hooks/r42.pb.js` (`POST /api/r42/outbox/claim`): inside one transaction it selects due rows whose
lease is free and writes `claimed_by` and `lease_until` on them. SQLite admits one writer at a time,
so a row is handed to one claimer per lease. A consumer that dies mid-batch leaves its rows leased;
they come back to everyone when the lease ends (the work is idempotent, so redoing them is safe).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from datetime import UTC, datetime, timedelta

from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PBError, PocketBase, pb_time, quote
from r42_app.settings import load_settings

log = logging.getLogger(__name__)


def lease_seconds() -> int:
    """How long a claim holds (R42_OUTBOX_LEASE_S, default 60): a live holder renews it every third of
    that; the rows of a holder that died come back to everyone after at most this long."""
    return load_settings().outbox_lease_s


def worker_id(role: str) -> str:
    """A name for this consumer, shown on the rows it holds: host, process and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{role}:{uuid.uuid4().hex[:6]}"


def claim(pb: PocketBase, worker: str, types: tuple[str, ...], limit: int, *, lease_s: int | None = None,
          tenant_id: str | None = None, now: datetime | None = None) -> list[dict]:
    """Lease up to `limit` due rows of these types (oldest first) to `worker`; returns them."""
    body: dict = {"worker": worker, "types": list(types), "limit": int(limit),
                  "lease_seconds": int(lease_s or lease_seconds())}
    if tenant_id:
        body["tenant"] = tenant_id
    if now is not None:
        body["now"] = pb_time(now)
    return (pb.send("POST", "/api/r42/outbox/claim", body=body) or {}).get("items", [])


# A row's lease is never cleared by its holder: `done` takes it out of every claim, and a failed row waits
# for its `available_at`. Clearing it could end the lease of a worker that took the row over after this
# one's lease ran out (a stalled PocketBase), and let a third claim it. `claimed_by` stays as a record.


class Renewal:
    """Keeps the lease on claimed rows alive while their work runs (a thread renews every third of the
    lease), so a slow batch is never handed to a second worker. Use as a context manager."""

    def __init__(self, pb: PocketBase, rows: list[dict], lease_s: int | None = None):
        self.pb, self.ids = pb, [r["id"] for r in rows]
        self.lease_s = lease_s or lease_seconds()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="outbox-lease", daemon=True)

    def __enter__(self) -> Renewal:
        if self.ids:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            until = pb_time(datetime.now(UTC) + timedelta(seconds=self.lease_s))
            try:
                for start in range(0, len(self.ids), BULK_BATCH):
                    self.pb.batch([BatchRequest.update("outbox", i, {"lease_until": until})
                                   for i in self.ids[start:start + BULK_BATCH]])
            except PBError as exc:  # the work goes on; at worst another worker does these rows again (idempotent)
                log.warning("renewing the lease on %d outbox row(s) failed: %s", len(self.ids), exc)


def held_elsewhere(pb: PocketBase, worker: str, types: tuple[str, ...], tenant_id: str | None = None,
                   since: datetime | None = None) -> int:
    """Rows of these types still pending and leased to another worker (maybe one that died). With
    `since`, only rows created before then: a drain waits for what was there, not for new traffic."""
    now = pb_time(datetime.now(UTC))
    flt = (f'(status = "pending" || status = "failed") && lease_until > {quote(now)} && claimed_by != {quote(worker)}'
           " && (" + " || ".join(f"type = {quote(t)}" for t in types) + ")")
    if tenant_id:
        flt += f" && payload.tenant = {quote(tenant_id)}"
    if since is not None:
        flt += f" && created <= {quote(pb_time(since))}"
    return int(pb.list("outbox", filter=flt, per_page=1, fields="id", total=True).get("totalItems", 0))
