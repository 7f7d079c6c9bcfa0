"""The outbox indexer: drains `rag.index.kbarticle.*` rows into the Chroma collection.

For each topic named by pending rows it looks at the topic *as it is now*: present -> chunk,
embed (in batches) and replace its chunks; gone -> delete its chunks. Chunk ids are
deterministic, so replaying the outbox, or re-running a batch after a crash, gives the same
index: every topic indexed exactly once. Failures are retried with exponential backoff;
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

from r42_app.core.retrieval import MAX_CHUNKS, chunk_text, visible_topic
from r42_app.services.embeddings import Embedder
from r42_app.services.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBStore, Tenant
from r42_app.services.outbox import Renewal, claim, held_elsewhere, worker_id
from r42_app.services.pb import BatchRequest, PBError, PocketBase, pb_time, quote
from r42_app.services.vector_store import VectorStore

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
    chunks: int = 0
    failed_rows: int = 0
    seconds: float = 0.0

    def add(self, other: "DrainStats") -> None:
        for name in ("rows", "topics_indexed", "topics_deleted", "chunks", "failed_rows", "seconds"):
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
    leased to one indexer (services/outbox.py), and the work itself is idempotent."""

    def __init__(self, pb: PocketBase, kb: KBStore, vectors: VectorStore, embedder: Embedder,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc), max_chunks: int = MAX_CHUNKS,
                 worker: str = ""):
        self.worker = worker or worker_id("index")
        self.pb = pb
        self.kb = kb
        self.vectors = vectors
        self.embedder = embedder
        self.clock = clock
        self.rows_per_run = ROWS_PER_RUN
        self.max_chunks = max_chunks

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
                present = [topics[s] for s in slugs if s in topics]
                chunks = [chunk_text(visible_topic(topic), max_chunks=self.max_chunks) for topic in present]
                texts = [text for topic_chunks in chunks for text in topic_chunks]
                vectors = self.embedder.encode(texts) if texts else None
                batch, offset = [], 0
                for topic, topic_chunks in zip(present, chunks):
                    batch.append((topic.slug, topic_chunks, vectors[offset:offset + len(topic_chunks)]))
                    offset += len(topic_chunks)
                self.vectors.replace_topics(tid, batch)
                gone = [slug for slug in slugs if slug not in topics]
                self.vectors.delete_topics(tid, gone)
                stats.topics_deleted += len(gone)
                if progress:
                    progress(sum(len(groups[k]) for k in keys))
                stats.topics_indexed += len(present)
                stats.chunks += len(texts)
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

    async def run_forever(self, interval: float = 1.0, stop: asyncio.Event | None = None) -> None:
        """Poll the outbox (the app backend runs this as a background task). While PocketBase cannot be
        reached it backs off (up to 30 s) and says so once, and once more when it is back."""
        failing = 0
        while stop is None or not stop.is_set():
            try:
                stats = await asyncio.to_thread(self.run_once)
                if failing:
                    log.warning("indexer: PocketBase answers again")
                    failing = 0
                if stats.rows:
                    log.info("indexed %d topic(s), %d chunk(s) in %.2fs", stats.topics_indexed, stats.chunks,
                             stats.seconds)
                    continue
            except Exception as exc:  # PocketBase restarting, etc.: keep the loop alive, quietly
                if not failing:
                    log.warning("indexer: %s (retrying with backoff)", exc)
                failing += 1
            await asyncio.sleep(min(30.0, interval * 2 ** failing) if failing else interval)

