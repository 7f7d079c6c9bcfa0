"""AI cost: the price table, publishing a turn's cost events to the outbox, and persisting them.

A turn's events go to the outbox as one `ai.cost.event.persist` row when the turn ends (also when it
failed or was stopped after tokens were spent). The persister (the app backend and `r42 worker`)
writes each event into `ai_cost_events` under its deterministic id and debits the tenant's credits in
the same PocketBase transaction: replaying the outbox finds the id taken and writes nothing twice.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import hashlib
import io
import json
import logging
import math
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterable

from r42_app.core.costs import (
    AICostEvent,
    CostReport,
    DailyRow,
    Price,
    Round,
    TenantCredits,
    Usage,
    build_report,
    cost_events,
    price_for,
)
from r42_app.core.errors import UserError
from r42_app.core.identity import Tenant
from r42_app.core.messages import nl_number
from r42_app.services.outbox.outbox import Renewal, claim, held_elsewhere, worker_id
from r42_app.services.store.audit import audit_request
from r42_app.services.store.pb import BatchRequest, PBError, PocketBase, pb_time, quote

publish_log = logging.getLogger("r42.ai_cost.publisher")
log = logging.getLogger(__name__)

OUTBOX_COST = "ai.cost.event.persist"
PRICE_TABLE = Path(__file__).resolve().parents[2] / "config" / "model_prices.json"
MAX_ATTEMPTS = 8
BATCH_REQUESTS = 400  # sub-requests per transaction (PocketBase allows 500)


def _price(raw: dict) -> Price:
    return Price(float(raw["input"]), float(raw["output"]),
                 float(raw["cache_write"]) if raw.get("cache_write") is not None else None,
                 float(raw["cache_read"]) if raw.get("cache_read") is not None else None)


class PriceTable:
    """Prices per model id from a JSON file (`r42_app/config/model_prices.json`, or R42_PRICE_TABLE)."""

    def __init__(self, models: dict[str, Price], default: Price):
        self.models = models
        self.default = default
        self._warned: set[str] = set()

    @classmethod
    def load(cls, path: Path | str | None = None) -> "PriceTable":
        data = json.loads(Path(path or PRICE_TABLE).read_text(encoding="utf-8"))
        return cls({m: _price(p) for m, p in (data.get("models") or {}).items()}, _price(data["default"]))

    def price(self, model: str) -> Price:
        price, known = price_for(self.models, model, self.default)
        if not known and model not in self._warned:
            self._warned.add(model)
            log.warning("no price for model %r in the price table: using the default (%s in / %s out per "
                        "million tokens); add it to %s", model, self.default.input, self.default.output, PRICE_TABLE)
        return price


def rollup_id(tenant: str, day: str, user: str, source: str, model: str) -> str:
    """The id of one `ai_cost_daily` row (tenant, UTC day, user, source, model)."""
    return hashlib.sha256(f"{tenant}|{day}|{user}|{source}|{model}".encode()).hexdigest()[:15]


class CostRecorder:
    """Publishes a turn's cost events to the outbox; never fails the turn (failures are logged as
    `publish.failed` under the logger `r42.ai_cost.publisher`)."""

    def __init__(self, pb: PocketBase, prices: PriceTable, enabled: bool = True):
        self.pb = pb
        self.prices = prices
        self.enabled = enabled
        self._pending: set[asyncio.Future] = set()

    def track(self, future: asyncio.Future) -> None:
        """Keep a publishing future until it is done (so `flush` can wait for it)."""
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        """Wait until every event published from this loop is in the outbox (tests, shutdown)."""
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def events(self, turn_id: str, tenant_id: str, user_id: str, model: str, rounds: Iterable[Round]) -> list[AICostEvent]:
        return cost_events(turn_id, tenant_id, user_id, model, rounds, self.prices.price(model))

    def record(self, turn_id: str, tenant_id: str, user_id: str, model: str, rounds: list[Round]) -> list[AICostEvent]:
        """Compute the turn's events and queue them in one outbox row."""
        if not self.enabled:
            return []
        try:
            events = self.events(turn_id, tenant_id, user_id, model, rounds)
            if events:
                self.pb.create("outbox", {"type": OUTBOX_COST, "status": "pending", "attempts": 0,
                                          "payload": {"turn_id": turn_id, "tenant": tenant_id,
                                                      "events": [e.as_dict() for e in events]}})
            return events
        except Exception as exc:  # the answer was given; losing the cost must be visible, not fatal
            publish_log.error("publish.failed turn=%s tenant=%s reason=%s", turn_id, tenant_id, exc)
            return []


@dataclass
class PersistStats:
    rows: int = 0
    events: int = 0
    duplicates: int = 0
    failed_rows: int = 0


class CostPersister:
    """Drains `ai.cost.event.persist` rows into `ai_cost_events`, debiting credits once per event."""

    def __init__(self, pb: PocketBase, clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 worker: str = ""):
        self.pb = pb
        self.clock = clock
        self.rows_per_run = 200
        self.worker = worker or worker_id("cost")

    def pending(self, limit: int) -> list[dict]:
        """Claim up to `limit` due rows for this persister (services/outbox/outbox.py)."""
        return claim(self.pb, self.worker, (OUTBOX_COST,), limit, now=self.clock())

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

    def run_once(self, limit: int | None = None) -> PersistStats:
        """Persist up to `limit` due rows. Rows go in transactions of many events at once, each together
        with marking its outbox rows done; when such a transaction is refused (an event written before,
        a bad row), its rows are redone one event at a time."""
        rows = self.pending(limit or self.rows_per_run)
        if not rows:
            return PersistStats()
        with Renewal(self.pb, rows):
            return self._persist_rows(rows)

    def _persist_rows(self, rows: list[dict]) -> PersistStats:
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
                stats.failed_rows += 1
                # a tenant deleted since: its costs went with it (cascade), retrying cannot help
                self._fail(row, exc, final=exc.status == 404)
            except Exception as exc:  # an unreadable payload: retried with backoff, then failed
                stats.rows += 1
                stats.failed_rows += 1
                self._fail(row, exc)
        chunk: list[tuple[dict, list[AICostEvent]]] = []
        size = 0
        for row, events in [*parsed, (None, [])]:
            cost = 4 * len(events) + 1
            if chunk and (row is None or size + cost > BATCH_REQUESTS):
                self._persist_chunk(chunk, unlimited, stats)
                chunk, size = [], 0
            if row is not None:
                chunk.append((row, events))
                size += cost
        return stats

    def _persist_chunk(self, chunk: list[tuple[dict, list[AICostEvent]]], unlimited: dict[str, bool],
                       stats: PersistStats) -> None:
        requests = [r for _row, events in chunk for e in events for r in self._requests(e, unlimited[e.tenant])]
        requests += [BatchRequest.update("outbox", row["id"], {"status": "done", "attempts": int(row.get("attempts", 0)) + 1,
                                                               "last_error": ""}) for row, _events in chunk]
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
                self.pb.update("outbox", row["id"], {"status": "done", "attempts": int(row.get("attempts", 0)) + 1,
                                                     "last_error": ""})
            except Exception as exc:  # retried with backoff; one bad row must not stop the others
                stats.failed_rows += 1
                self._fail(row, exc)

    def drain(self, wait_for_leases: bool = False) -> PersistStats:
        """Run until no due row is left (with `wait_for_leases`, also rows another worker holds)."""
        total, started = PersistStats(), datetime.now(timezone.utc)
        while True:
            stats = self.run_once()
            for name in ("rows", "events", "duplicates", "failed_rows"):
                setattr(total, name, getattr(total, name) + getattr(stats, name))
            if stats.rows and stats.rows != stats.failed_rows:
                continue
            if not (wait_for_leases and held_elsewhere(self.pb, self.worker, (OUTBOX_COST,), since=started)):
                return total
            time.sleep(0.5)

    def _fail(self, row: dict, exc: Exception, final: bool = False) -> None:
        from r42_app.services.outbox.indexer import FAILED_RETRY_S, backoff

        attempts = int(row.get("attempts", 0)) + 1
        body: dict = {"attempts": attempts, "last_error": f"{type(exc).__name__}: {exc}"[:2000],
                      "available_at": pb_time(self.clock() + timedelta(seconds=backoff(attempts)))}
        if final:  # the tenant is gone: nothing left to write, ever
            body.update(status="done", available_at="")
        elif attempts >= MAX_ATTEMPTS:  # shown as failed (r42 doctor); still retried, once an hour
            body.update(status="failed", available_at=pb_time(self.clock() + timedelta(seconds=FAILED_RETRY_S)))
        log.warning("persisting cost events of outbox row %s failed: %s", row["id"], exc)
        try:
            self.pb.update("outbox", row["id"], body)
        except PBError as pb_exc:
            log.error("could not record the cost persist failure: %s", pb_exc)

    async def run_forever(self, interval: float = 1.0, stop: asyncio.Event | None = None) -> None:
        """Poll the outbox (the app backend and `r42 worker` run this); backs off while PocketBase is away."""
        failing = 0
        while stop is None or not stop.is_set():
            try:
                started = time.perf_counter()
                stats = await asyncio.to_thread(self.run_once)
                failing = 0
                if stats.rows:
                    log.info("persisted %d cost event(s) (%d already there) in %.2fs", stats.events, stats.duplicates,
                             time.perf_counter() - started)
                    continue
            except Exception as exc:  # PocketBase restarting, etc.: keep the loop alive, quietly
                if not failing:
                    log.warning("cost persister: %s (retrying with backoff)", exc)
                failing += 1
            await asyncio.sleep(min(30.0, interval * 2 ** failing) if failing else interval)


class CreditError(UserError):
    """A credit change was refused: `str()` says why for the CLI, `user_message` for the costs page."""


class CreditStore:
    """A tenant's AI credit: read, set, add, the unlimited flag; every change audited (`credits.*`)."""

    def __init__(self, pb: PocketBase):
        self.pb = pb

    def show(self, tenant: Tenant) -> TenantCredits:
        row = self.pb.get("tenants", tenant.id)
        credits = row.get("credits")
        return TenantCredits(float(credits) if isinstance(credits, (int, float)) else 0.0,
                             bool(row.get("credits_unlimited")), str(row.get("plan") or ""))

    def change(self, tenant: Tenant, actor_id: str, actor: str, *, set_to: float | None = None,
               add: float | None = None, unlimited: bool | None = None) -> TenantCredits:
        """Set or add credits and/or switch the unlimited plan, with one audit row, in one transaction."""
        for value in (set_to, add):
            if value is not None and (not math.isfinite(value) or abs(value) > MAX_CREDITS):
                raise CreditError("credits.out_of_range", f"credits must be a number between -{MAX_CREDITS:,} and "
                                  f"{MAX_CREDITS:,}", maximum=nl_number(MAX_CREDITS))
        if set_to is not None and set_to < 0:
            raise CreditError("credits.below_zero", "credits cannot be set below 0")
        before = self.show(tenant)
        body: dict = {}
        if set_to is not None:
            body["credits"] = round(set_to, 6)
        if add is not None:
            body["credits+"] = round(add, 6)  # atomic in PocketBase: a turn debiting meanwhile is not lost
        if unlimited is not None:
            body["credits_unlimited"] = unlimited
        if not body:
            return before
        what = ", ".join(filter(None, [f"set {set_to:g}" if set_to is not None else "",
                                      f"add {add:g}" if add is not None else "",
                                      ("unlimited on" if unlimited else "unlimited off") if unlimited is not None else ""]))
        after_guess = TenantCredits(round((set_to if set_to is not None else before.credits) + (add or 0), 6),
                                    before.unlimited if unlimited is None else unlimited, before.plan)
        try:
            self.pb.batch([BatchRequest.update("tenants", tenant.id, body),
                           audit_request(tenant, actor_id, actor, "credits.change", "", what, _describe(before),
                                         _describe(after_guess))])
        except PBError as exc:
            raise CreditError("credits.change_failed", f"PocketBase refused the change: {exc}") from exc
        return self.show(tenant)


MAX_CREDITS = 1_000_000_000


def _describe(c: TenantCredits) -> str:
    return "onbeperkt" if c.unlimited else f"{c.credits:.2f} credits"


# -- the cost report ----------------------------------------------------------------------------------

CSV_FIELDS = ("created", "turn_id", "user", "capability", "source", "model", "input_tokens", "output_tokens",
              "cache_write_tokens", "cache_read_tokens", "cost_usd", "credits")


def day_range(since: date, until: date) -> list[str]:
    """Every UTC day from `since` to `until`, inclusive (at most 366)."""
    if until < since:
        raise ValueError("the end date is before the start date")
    if (until - since).days > 366:
        raise ValueError("a report covers at most a year")
    return [(since + timedelta(days=i)).isoformat() for i in range((until - since).days + 1)]


class CostReports:
    """Reads a tenant's cost report from the daily rollup (a few rows per day, whatever the number of events)."""

    def __init__(self, pb: PocketBase):
        self.pb = pb

    def daily_rows(self, tenant: Tenant, since: date, until: date) -> list[DailyRow]:
        flt = (f"tenant = {quote(tenant.id)} && day >= {quote(since.isoformat())} && "
               f"day <= {quote(until.isoformat())}")
        out = []
        for r in self.pb.iter_all("ai_cost_daily", filter=flt, sort="day", expand="user"):
            user = (r.get("expand") or {}).get("user") or {}
            usage = Usage(int(r.get("input_tokens") or 0), int(r.get("output_tokens") or 0),
                          int(r.get("cache_write_tokens") or 0), int(r.get("cache_read_tokens") or 0))
            out.append(DailyRow(r["day"], user.get("name") or user.get("email") or "", r.get("source", ""),
                                r.get("model", ""), int(r.get("events") or 0), usage, float(r.get("cost_usd") or 0),
                                float(r.get("credits") or 0)))
        return out

    def report(self, tenant: Tenant, since: date, until: date) -> CostReport:
        days = day_range(since, until)
        return build_report(self.daily_rows(tenant, since, until), days, days[0], days[-1])

    def events_csv(self, tenant: Tenant, since: date, until: date) -> str:
        """Every cost event of the range as CSV (UTC; the export button and `r42 costs report --csv`)."""
        day_range(since, until)
        start, end = since.isoformat() + " 00:00:00.000Z", (until + timedelta(days=1)).isoformat() + " 00:00:00.000Z"
        flt = f"tenant = {quote(tenant.id)} && created >= {quote(start)} && created < {quote(end)}"
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(CSV_FIELDS)
        for r in self.pb.iter_all("ai_cost_events", filter=flt, sort="created,id", expand="user"):
            user = (r.get("expand") or {}).get("user") or {}
            writer.writerow([r.get("created", ""), r.get("turn_id", ""), user.get("email", ""),
                             *(r.get(f, "") for f in CSV_FIELDS[3:])])
        return buffer.getvalue()
