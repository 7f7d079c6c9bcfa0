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
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from r42_app.core.identity import Tenant
from r42_app.core.retrieval import embedding_inputs
from r42_app.services.adapters.embeddings import Embedder
from r42_app.services.adapters.vector_store import IndexBusy, VectorStore
from r42_app.services.outbox.consumer import OutboxConsumer, RunStats
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBStore
from r42_app.services.store.pb import PocketBase, quote

log = logging.getLogger(__name__)

ROWS_PER_RUN = 256


@dataclass
class DrainStats(RunStats):
    topics_indexed: int = 0
    topics_deleted: int = 0
    passages: int = 0


class Indexer(OutboxConsumer[DrainStats]):
    """Turns outbox rows into Chroma writes. Safe to run in several processes: each batch of rows is
    leased to one indexer (services/outbox/outbox.py), and the work itself is idempotent."""

    types = (OUTBOX_UPSERT, OUTBOX_DELETE)
    role = "index"
    stats = DrainStats
    rows_per_run = ROWS_PER_RUN

    def __init__(self, pb: PocketBase, kb: KBStore, vectors: VectorStore, embedder: Embedder,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC), worker: str = ""):
        super().__init__(pb, clock, worker)
        self.kb = kb
        self.vectors = vectors
        self.embedder = embedder

    def pending_count(self, tenant_id: str | None = None) -> int:
        flt = f'status = "pending" && (type = {quote(OUTBOX_UPSERT)} || type = {quote(OUTBOX_DELETE)})'
        if tenant_id:
            flt += f" && payload.tenant = {quote(tenant_id)}"
        return int(self.pb.list("outbox", filter=flt, per_page=1, fields="id", total=True).get("totalItems", 0))

    def process(self, rows: list[dict], progress: Callable[[int], None] | None) -> DrainStats:
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
                vectors = self.embedder.encode([wanted[key][1] for key in new]) if new else ()
                self.vectors.write(tid, [(key, wanted[key][0], v) for key, v in zip(new, vectors)], stale)
                gone = [slug for slug in slugs if slug not in topics]
                stats.topics_deleted += len(gone)
                if progress:
                    progress(sum(len(groups[k]) for k in keys))
                stats.topics_indexed += len(topics)
                stats.passages += len(new)
                self.finish([r for k in keys for r in groups[k]])
            except Exception as exc:  # record and retry later; one bad tenant must not stop the others
                log.warning("indexing %d topic(s) of tenant %s failed: %s", len(slugs), tslug or tid, exc)
                failed = [r for k in keys for r in groups[k]]
                stats.failed_rows += len(failed)
                self.fail(failed, exc)
            stats.rows += sum(len(groups[k]) for k in keys)
        return stats

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

    def check_ready(self) -> None:
        if not self.vectors.can_write():  # another process writes this embedded index: it takes the rows
            raise IndexBusy(f"another process writes the embedded index in {self.vectors.path}")

    async def on_start(self) -> None:
        try:
            await asyncio.to_thread(self.ensure_current_model)
        except Exception as exc:  # noqa: BLE001 - PocketBase or Chroma not ready: a later edit's rows still index
            log.warning("indexer: could not check the index's embedding model: %s", exc)

    def describe(self, stats: DrainStats) -> str:
        return f"indexed {stats.topics_indexed} topic(s), {stats.passages} new passage(s) in {stats.seconds:.2f}s"
