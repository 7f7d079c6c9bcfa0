"""AI cost: the price table, publishing a turn's cost events, and persisting them.

A chat turn's events are written when the turn ends (also when it failed or was stopped after tokens were
spent): the events of turns that end together in one PocketBase transaction (`CostRecorder.publish`,
pb_hooks `/api/r42/cost-events`), each under its deterministic id, into its day's rollup, with the tenant's
credits debited. When PocketBase refuses that, and for callers outside a chat turn (`record`), the events go to
the outbox as one `ai.cost.event.persist` row per turn; the persister (the app backend and `r42 worker`) writes
them the same way. Either way an id already there is skipped: replaying writes nothing twice.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import logging
import math
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

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
from r42_app.core.messages import number
from r42_app.services.store.audit import audit_request
from r42_app.services.store.batched import Batched
from r42_app.services.store.group_commit import MAX_BATCH, GroupCommit
from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PBError, PocketBase, quote

publish_log = logging.getLogger("r42.ai_cost.publisher")
log = logging.getLogger(__name__)

OUTBOX_COST = "ai.cost.event.persist"
PRICE_TABLE = Path(__file__).resolve().parents[2] / "config" / "model_prices.json"
BATCH_REQUESTS = BULK_BATCH  # sub-requests per transaction (a turn's events and its outbox row stay together)
MAX_DIRECT_EVENTS = 400  # events per cost-events request (pb_hooks/r42_rules.js MAX_COST_EVENTS)


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
    def load(cls, path: Path | str | None = None) -> PriceTable:
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
    """Publishes a turn's cost events (written at once, or through the outbox); never fails the turn (failures are
    logged as `publish.failed` under the logger `r42.ai_cost.publisher`)."""

    def __init__(self, pb: PocketBase, prices: PriceTable, enabled: bool = True):
        self.pb = pb
        self.prices = prices
        self.enabled = enabled
        self._pending: set[asyncio.Future] = set()
        self._outbox = GroupCommit(pb, "outbox")  # turns ending together share a request
        self._rows: Batched[tuple[str, str, dict], dict | None] = Batched(self._write_rows, max_batch=MAX_BATCH)

    def track(self, future: asyncio.Future) -> None:
        """Keep a publishing future until it is done (so `flush` can wait for it)."""
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        """Wait until every event published from this loop is in the outbox (tests, shutdown)."""
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def events(self, turn_id: str, tenant_id: str, user_id: str, model: str,
               rounds: Iterable[Round]) -> list[AICostEvent]:
        return cost_events(turn_id, tenant_id, user_id, model, rounds, self.prices.price(model))

    def publish(self, turn_id: str, tenant_id: str, user_id: str, model: str, rounds: list[Round]) -> None:
        """`record` for a chat turn, from the event loop without a thread of its own: the turn's events are queued,
        and those of turns that end together are written in one transaction (`write_events`; their outbox rows in
        one batch request if PocketBase refuses it; services/store/batched.py). `flush` waits for it; a failure
        is logged as `publish.failed`, never raised."""
        if not self.enabled:
            return
        try:
            events = self.events(turn_id, tenant_id, user_id, model, rounds)
        except Exception as exc:  # noqa: BLE001 - the answer was given; losing the cost must be visible, not fatal
            publish_log.error("publish.failed turn=%s tenant=%s reason=%s", turn_id, tenant_id, exc)
            return
        if events:
            self.track(self._rows.submit((turn_id, tenant_id, self._row(turn_id, tenant_id, events))))

    @staticmethod
    def _row(turn_id: str, tenant_id: str, events: list[AICostEvent]) -> dict:
        return {"type": OUTBOX_COST, "status": "pending", "attempts": 0,
                "payload": {"turn_id": turn_id, "tenant": tenant_id, "events": [e.as_dict() for e in events]}}

    def _write_rows(self, rows: list[tuple[str, str, dict]]) -> list[dict | None]:
        """The turns' events written at once (`write_events`); when PocketBase refuses that, each turn's outbox row
        for the persister (a row it cannot take is logged as `publish.failed`)."""
        try:
            written = self.write_events([e for _, _, body in rows for e in body["payload"]["events"]])
            return [written] * len(rows)
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the outbox below still takes the events
            if not isinstance(exc, PBError) or exc.status:  # (unreachable: the outbox write fails too and says so)
                publish_log.warning("cost events of %d turn(s) go through the outbox: %s", len(rows), exc)
        out: list[dict | None] = []
        for (turn_id, tenant_id, _body), stored in zip(rows, self._outbox.write_many([body for _, _, body in rows]),
                                                        strict=True):
            if isinstance(stored, Exception):
                publish_log.error("publish.failed turn=%s tenant=%s reason=%s", turn_id, tenant_id, stored)
                out.append(None)
            else:
                out.append(stored)
        return out

    def write_events(self, events: list[dict], day: str = "") -> dict:
        """Write cost events (`AICostEvent.as_dict()`s) as the persister does, without the outbox: each once under its
        id, into its day's rollup, its credits debited (not on an unlimited plan), all in one transaction
        (pb_hooks `/api/r42/cost-events`, up to MAX_DIRECT_EVENTS a request). Returns {"written", "duplicates"};
        raises PBError when PocketBase refuses a request, which then wrote nothing (the caller puts all the events
        in the outbox, whose persister skips those an earlier request wrote). `day`: the UTC day (today)."""
        day = day or datetime.now(UTC).strftime("%Y-%m-%d")
        items = [{"event": e, "rollup": rollup_id(e["tenant"], day, e.get("user") or "", e["source"], e["model"]),
                  "rollup_without_user": rollup_id(e["tenant"], day, "", e["source"], e["model"])} for e in events]
        total = {"written": 0, "duplicates": 0}
        for start in range(0, len(items), MAX_DIRECT_EVENTS):
            answer = self.pb.send("POST", "/api/r42/cost-events",
                                  body={"day": day, "events": items[start:start + MAX_DIRECT_EVENTS]}) or {}
            for key in total:
                total[key] += int(answer.get(key) or 0)
        return total

    def record(self, turn_id: str, tenant_id: str, user_id: str, model: str, rounds: list[Round]) -> list[AICostEvent]:
        """Compute the turn's events and queue them in one outbox row (returns once it is stored; turns that end
        together share a batch request: services/store/group_commit.py)."""
        if not self.enabled:
            return []
        try:
            events = self.events(turn_id, tenant_id, user_id, model, rounds)
            if events:
                self._outbox.create(self._row(turn_id, tenant_id, events))
            return events
        except Exception as exc:  # the answer was given; losing the cost must be visible, not fatal
            publish_log.error("publish.failed turn=%s tenant=%s reason=%s", turn_id, tenant_id, exc)
            return []


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
                                  f"{MAX_CREDITS:,}", maximum=number(MAX_CREDITS))
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
                                      ("unlimited on" if unlimited else "unlimited off")
                                      if unlimited is not None else ""]))
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
