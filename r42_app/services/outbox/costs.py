"""The AI cost events' outbox consumer: chat turns queue `ai.cost.event.persist` rows (CostRecorder); this
writes each event once, adds it to its day's rollup and debits the tenant's credits, in one transaction."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

from r42_app.core.costs import AICostEvent
from r42_app.services.outbox.consumer import OutboxConsumer, RunStats, done_body
from r42_app.services.store.costs import BATCH_REQUESTS, OUTBOX_COST, rollup_id
from r42_app.services.store.pb import BatchRequest, PBError

log = logging.getLogger(__name__)


@dataclass
class PersistStats(RunStats):
    events: int = 0
    duplicates: int = 0
    dropped: int = 0  # rows of a tenant deleted since: its costs went with it, nothing is left to write


class CostPersister(OutboxConsumer[PersistStats]):
    """Drains `ai.cost.event.persist` rows into `ai_cost_events`, debiting credits once per event."""

    types = (OUTBOX_COST,)
    role = "cost"
    stats = PersistStats
    rows_per_run = 200

    def describe(self, stats: PersistStats) -> str:
        dropped = f", {stats.dropped} of deleted tenants dropped" if stats.dropped else ""
        return (f"persisted {stats.events} cost event(s) ({stats.duplicates} already there{dropped}) "
                f"in {stats.seconds:.2f}s")

    def _requests(self, event: AICostEvent, unlimited: bool) -> list[BatchRequest]:
        """Write one event, add it to its day's rollup and debit its credits (sent in one transaction)."""
        body = {**event.as_dict(), "user": event.user or None}
        day = self.clock().strftime("%Y-%m-%d")  # the UTC day the event is stored (its `created`)
        rollup = {"id": rollup_id(event.tenant, day, event.user, event.source, event.model), "tenant": event.tenant,
                  "day": day, "user": event.user or None, "source": event.source, "model": event.model,
                  "events+": 1, "input_tokens+": event.usage.input_tokens,
                  "output_tokens+": event.usage.output_tokens, "cache_write_tokens+": event.usage.cache_write_tokens,
                  "cache_read_tokens+": event.usage.cache_read_tokens, "cost_usd+": event.cost_usd,
                  "credits+": event.credits}
        requests = [BatchRequest.create("ai_cost_events", body),
                    BatchRequest("PUT", "/api/collections/ai_cost_daily/records", rollup)]  # upsert
        if not unlimited and event.credits > 0:
            requests.append(BatchRequest.update("tenants", event.tenant, {"credits-": event.credits}))
        return requests

    def persist(self, event: AICostEvent, unlimited: bool) -> bool:
        """Write one event with its rollup and debit in one transaction; False when it was already written
        (then nothing else is either). An event of a user deleted since is kept, without the user."""
        try:
            self.pb.batch(self._requests(event, unlimited))
        except PBError as exc:
            if self._exists("ai_cost_events", event.id):  # written before (a replay, or another worker won the race)
                return False
            if event.user and not self._exists("users", event.user):
                return self.persist(dataclasses.replace(event, user=""), unlimited)
            raise exc
        return True

    def _exists(self, collection: str, record_id: str) -> bool:
        try:
            self.pb.get(collection, record_id)
            return True
        except PBError as exc:
            if exc.status == 404:
                return False
            raise

    def process(self, rows: list[dict], progress: Callable[[int], None] | None = None) -> PersistStats:
        stats = PersistStats()
        unlimited: dict[str, bool] = {}
        parsed: list[tuple[dict, list[AICostEvent]]] = []
        for row in rows:
            try:
                events = [AICostEvent.from_dict(raw) for raw in (row.get("payload") or {}).get("events") or []]
                for e in events:
                    if e.tenant not in unlimited:
                        unlimited[e.tenant] = bool(self.pb.get("tenants", e.tenant).get("credits_unlimited"))
                parsed.append((row, events))
            except PBError as exc:
                stats.rows += 1
                if exc.status == 404:  # a tenant deleted since: its costs went with it (cascade), nothing to retry
                    stats.dropped += 1
                    self.fail([row], exc, final=True)
                else:
                    stats.failed_rows += 1
                    self.fail([row], exc)
            except Exception as exc:  # an unreadable payload: retried with backoff, then failed
                stats.rows += 1
                stats.failed_rows += 1
                self.fail([row], exc)
        chunk: list[tuple[dict, list[AICostEvent]]] = []
        size = 0
        for record, events in [*parsed, (None, [])]:  # None: the end, flush what is left
            cost = 4 * len(events) + 1
            if chunk and (record is None or size + cost > BATCH_REQUESTS):
                self._persist_chunk(chunk, unlimited, stats)
                chunk, size = [], 0
            if record is not None:
                chunk.append((record, events))
                size += cost
        return stats

    def _persist_chunk(self, chunk: list[tuple[dict, list[AICostEvent]]], unlimited: dict[str, bool],
                       stats: PersistStats) -> None:
        requests = [r for _row, events in chunk for e in events for r in self._requests(e, unlimited[e.tenant])]
        requests += [BatchRequest.update("outbox", row["id"], done_body(row)) for row, _events in chunk]
        try:
            self.pb.batch(requests)
            stats.rows += len(chunk)
            stats.events += sum(len(events) for _row, events in chunk)
            return
        except PBError:
            pass  # some event was written before, or a row is bad: one at a time below
        for row, events in chunk:
            stats.rows += 1
            try:
                for event in events:
                    if self.persist(event, unlimited[event.tenant]):
                        stats.events += 1
                    else:
                        stats.duplicates += 1
                self.pb.update("outbox", row["id"], done_body(row))
            except Exception as exc:  # retried with backoff; one bad row must not stop the others
                stats.failed_rows += 1
                self.fail([row], exc)
