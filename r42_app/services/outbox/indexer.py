"""The outbox indexer: drains `rag.index.kbarticle.*` rows into the tenant's passage vectors.

For each topic named by pending rows it looks at the topic *as it is now*: its passages (core/passages.py)
are compared with the ones stored; new passages are embedded (in batches) and added, stale ones deleted,
unchanged ones left alone; a topic that is gone loses all of them. Passage ids are stable, so replaying the
outbox, or re-running a batch after a crash, gives the same index. Failures are retried with exponential backoff;
`attempts` and `last_error` are recorded on the row; after MAX_ATTEMPTS the row shows as `failed` and is
still retried every hour (`r42 outbox retry` re-queues failed rows at once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable

from r42_app.core.identity import Tenant
from r42_app.core.retrieval import embedding_inputs
from r42_app.services.adapters.embeddings import Embedder
from r42_app.services.adapters.vector_store import IndexBusy, VectorStore
from r42_app.services.outbox.outbox import Renewal, claim, held_elsewhere, worker_id
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBStore
from r42_app.services.store.pb import BatchRequest, PBError, PocketBase, pb_time, quote

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
FAILED_RETRY_S = 3600.0  # a row that failed MAX_ATTEMPTS times is tried again this often
BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 600.0
ROWS_PER_RUN = 256


def backoff(attempts: int) -> float:
    """Seconds to wait before attempt `attempts + 1`."""
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1))


@dataclass
class DrainStats:
    rows: int = 0
    topics_indexed: int = 0
    topics_deleted: int = 0
    passages: int = 0
    failed_rows: int = 0
    seconds: float = 0.0

    def add(self, other: "DrainStats") -> None:
        for name in ("rows", "topics_indexed", "topics_deleted", "passages", "failed_rows", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def requeue_failed(pb: PocketBase, types: tuple[str, ...]) -> int:
    """`failed` outbox rows of these types back to pending, due now, attempts reset (`r42 outbox retry`)."""
    flt = 'status = "failed" && (' + " || ".join(f"type = {quote(t)}" for t in types) + ")"
    rows = pb.all("outbox", filter=flt, fields="id")
    requests = [BatchRequest.update("outbox", r["id"], {"status": "pending", "attempts": 0, "available_at": "",
                                                        "last_error": "", "lease_until": ""}) for r in rows]
    for start in range(0, len(requests), 400):
        pb.batch(requests[start:start + 400])
    return len(rows)


class Indexer:
    """Turns outbox rows into Chroma writes. Safe to run in several processes: each batch of rows is
    leased to one indexer (services/outbox/outbox.py), and the work itself is idempotent."""

    def __init__(self, pb: PocketBase, kb: KBStore, vectors: VectorStore, embedder: Embedder,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc), worker: str = ""):
        self.worker = worker or worker_id("index")
        self.pb = pb
        self.kb = kb
        self.vectors = vectors
        self.embedder = embedder
        self.clock = clock
        self.rows_per_run = ROWS_PER_RUN

    def pending(self, limit: int = ROWS_PER_RUN, tenant_id: str | None = None) -> list[dict]:
        """Claim up to `limit` due rows for this indexer. `failed` rows come back too, once their (long)
        wait is over: a broken index is retried, not abandoned."""
        return claim(self.pb, self.worker, (OUTBOX_UPSERT, OUTBOX_DELETE), limit, tenant_id=tenant_id,
                     now=self.clock())

    def pending_count(self, tenant_id: str | None = None) -> int:
        flt = f'status = "pending" && (type = {quote(OUTBOX_UPSERT)} || type = {quote(OUTBOX_DELETE)})'
        if tenant_id:
            flt += f" && payload.tenant = {quote(tenant_id)}"
        return int(self.pb.list("outbox", filter=flt, per_page=1, fields="id", total=True).get("totalItems", 0))

    def run_once(self, limit: int | None = None, tenant_id: str | None = None,
                 progress: Callable[[int], None] | None = None) -> DrainStats:
        """Process up to `limit` due rows; returns what was done."""
        started = time.perf_counter()
        if not self.vectors.can_write():  # another process writes this embedded index: it takes the rows
            raise IndexBusy(f"another process writes the embedded index in {self.vectors.path}")
        rows = self.pending(limit or self.rows_per_run, tenant_id)
        if not rows:
            return DrainStats()
        with Renewal(self.pb, rows):
            stats = self._index(rows, progress)
        stats.seconds = time.perf_counter() - started
        return stats

    def _index(self, rows: list[dict], progress: Callable[[int], None] | None) -> DrainStats:
        stats = DrainStats()
        # (tenant, slug) -> rows, oldest first; the topic's current state decides upsert or delete.
        groups: OrderedDict[tuple[str, str, str], list[dict]] = OrderedDict()
        for row in rows:
            payload = row.get("payload") or {}
            key = (payload.get("tenant", ""), payload.get("tenant_slug", ""), payload.get("topic", ""))
            groups.setdefault(key, []).append(row)

        by_tenant: dict[tuple[str, str], list[str]] = {}
        for tenant_id_, tenant_slug, slug in groups:
            by_tenant.setdefault((tenant_id_, tenant_slug), []).append(slug)

        for (tid, tslug), slugs in by_tenant.items():
            keys = [(tid, tslug, s) for s in slugs]
            try:
                if not tid:
                    raise ValueError("outbox row without a tenant: the global knowledge base is never indexed")
                tenant = Tenant(tid, tslug, tslug)
                topics = self.kb.topics_by_slug(tenant, slugs)
                wanted = {key: (topic.slug, text) for topic in topics.values() for key, text in embedding_inputs(topic)}
                stored = self.vectors.keys(tid, slugs)
                new = [key for key in wanted if key not in stored]
                stale = [key for key in stored if key not in wanted]
                vectors = self.embedder.encode([wanted[key][1] for key in new]) if new else []
                self.vectors.write(tid, [(key, wanted[key][0], v) for key, v in zip(new, vectors)], stale)
                gone = [slug for slug in slugs if slug not in topics]
                stats.topics_deleted += len(gone)
                if progress:
                    progress(sum(len(groups[k]) for k in keys))
                stats.topics_indexed += len(topics)
                stats.passages += len(new)
                self._finish([r for k in keys for r in groups[k]])
            except Exception as exc:  # record and retry later; one bad tenant must not stop the others
                log.warning("indexing %d topic(s) of tenant %s failed: %s", len(slugs), tslug or tid, exc)
                failed = [r for k in keys for r in groups[k]]
                stats.failed_rows += len(failed)
                self._fail(failed, exc)
            stats.rows += sum(len(groups[k]) for k in keys)
        return stats

    def drain(self, tenant_id: str | None = None, progress: Callable[[int], None] | None = None,
              wait_for_leases: bool = False) -> DrainStats:
        """Run until no due row is left (rows waiting for a retry are left for later). With
        `wait_for_leases`, rows another worker holds are waited for too: finished by it, or taken over
        when its lease ends (it died)."""
        total, started = DrainStats(), datetime.now(timezone.utc)
        while True:
            stats = self.run_once(tenant_id=tenant_id, progress=progress)
            total.add(stats)
            if stats.rows and stats.rows != stats.failed_rows:
                continue
            if not (wait_for_leases and held_elsewhere(self.pb, self.worker, (OUTBOX_UPSERT, OUTBOX_DELETE),
                                                       tenant_id, since=started)):
                return total
            time.sleep(0.5)

    def _finish(self, rows: list[dict]) -> None:
        requests = [BatchRequest.update("outbox", r["id"], {"status": "done", "attempts": r.get("attempts", 0) + 1,
                                                             "last_error": ""}) for r in rows]
        for start in range(0, len(requests), 400):
            self.pb.batch(requests[start:start + 400])

    def _fail(self, rows: list[dict], exc: Exception) -> None:
        now = self.clock()
        requests = []
        for r in rows:
            attempts = int(r.get("attempts", 0)) + 1
            body = {"attempts": attempts, "last_error": f"{type(exc).__name__}: {exc}"[:2000],
                    "available_at": pb_time(now + timedelta(seconds=backoff(attempts)))}
            if attempts >= MAX_ATTEMPTS:  # shown as failed (r42 doctor); still retried, once an hour
                body["status"] = "failed"
                body["available_at"] = pb_time(now + timedelta(seconds=FAILED_RETRY_S))
            requests.append(BatchRequest.update("outbox", r["id"], body))
        try:
            for start in range(0, len(requests), 400):
                self.pb.batch(requests[start:start + 400])
        except PBError as pb_exc:
            log.error("could not record the indexing failure: %s", pb_exc)

    def ensure_current_model(self) -> int:
        """After a change of embedding model (or an index from before passages): queue every topic of a tenant
        whose index for the current model is empty, and drop the indexes of other models once the current one
        is complete. Search uses fts for a tenant meanwhile; `r42 doctor` shows the progress. Returns the
        number of topics queued."""
        if not self.vectors.can_write():
            return 0
        queued = 0
        self.vectors.drop_legacy()
        for row in self.pb.all("tenants", fields="id,slug,name"):
            tenant = Tenant(row["id"], row["slug"], row.get("name", row["slug"]))
            if self.pending_count(tenant.id):
                continue  # being indexed: look again next start
            if self.vectors.count(tenant.id) == 0:
                count = self.kb.emit_reindex(tenant)
                if count:
                    log.info("tenant %s has no index for %s yet: re-embedding its %d topic(s) in the background",
                             tenant.slug, self.embedder.model_id, count)
                queued += count
            else:
                for name in self.vectors.other_models(tenant.id):
                    self.vectors.drop_collection(name)
                    log.info("dropped %s: the index of another embedding model", name)
        return queued

    async def run_forever(self, interval: float = 1.0, stop: asyncio.Event | None = None) -> None:
        """Poll the outbox (the app backend runs this as a background task). While PocketBase cannot be
        reached it backs off (up to 30 s) and says so once, and once more when it is back."""
        try:
            await asyncio.to_thread(self.ensure_current_model)
        except Exception as exc:  # PocketBase or Chroma not ready: the rows of a later edit still index
            log.warning("indexer: could not check the index's embedding model: %s", exc)
        failing = 0
        while stop is None or not stop.is_set():
            try:
                stats = await asyncio.to_thread(self.run_once)
                if failing:
                    log.warning("indexer: PocketBase answers again")
                    failing = 0
                if stats.rows:
                    log.info("indexed %d topic(s), %d new passage(s) in %.2fs", stats.topics_indexed, stats.passages,
                             stats.seconds)
                    continue
            except Exception as exc:  # PocketBase restarting, etc.: keep the loop alive, quietly
                if not failing:
                    log.warning("indexer: %s (retrying with backoff)", exc)
                failing += 1
            await asyncio.sleep(min(30.0, interval * 2 ** failing) if failing else interval)

