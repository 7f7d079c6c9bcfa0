"""AI cost benchmarks: events persisted per second through the outbox (10,000 events, against writing
each event with one plain create), and `/admin/costs` page loads at 1,000 and 100,000 events in the range
(with the report built from the daily rollup, next to summing every event row in Python)."""

from __future__ import annotations

import random
import statistics
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone

from bench.common import CHROMIUM_ARGS, ms, p50, p95, pocketbase, served_app
from r42_app.core.costs import AICostEvent, Price, Usage, event_id
from r42_app.services.outbox.costs import CostPersister
from r42_app.services.store.costs import OUTBOX_COST, CostReports, rollup_id
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import BatchRequest, PocketBase

PERSIST_EVENTS = 10_000
PAGE_LOADS = 7
PRICE = Price(1.0, 5.0)
SOURCES = ["chatbot:chat_general"] * 3 + ["chatbot:kb_search"] * 2 + ["chatbot:data_write"]


def _events(n: int, tenant_id: str, user_ids: list[str], seed: int, days: int = 28) -> list[tuple[str, AICostEvent]]:
    """(UTC day, event) pairs spread over the last `days` days of this month's range."""
    rng = random.Random(seed)
    today = datetime.now(timezone.utc).date()
    out = []
    for i in range(n):
        usage = Usage(rng.randint(800, 3000), rng.randint(40, 400), rng.choice([0, 0, 1500]), rng.choice([0, 1200]))
        usd = round(PRICE.cost(usage), 9)
        source = rng.choice(SOURCES)
        day = (today - timedelta(days=rng.randint(0, days - 1))).isoformat()
        turn = f"b{seed}-{i}"
        out.append((day, AICostEvent(event_id(turn, source), tenant_id, rng.choice(user_ids), turn,
                                     "chat-stream" if source.endswith("general") else "tool-call", source,
                                     "claude-haiku-4-5", usage, usd, round(usd / 0.001, 6))))
    return out


def _users(pb: PocketBase, tenant_id: str, n: int, prefix: str) -> list[str]:
    ids = []
    for i in range(n):
        row = pb.create("users", {"email": f"{prefix}{i}@bench.example", "password": "bench-pass-1",
                                  "passwordConfirm": "bench-pass-1", "name": f"{prefix.title()} {i}",
                                  "role": "learner", "tenant": tenant_id, "verified": True})
        ids.append(row["id"])
    return ids


def _persist_throughput() -> tuple[float, float]:
    """events/s: the outbox persister (event + rollup + credit debit in one transaction, idempotent) vs one
    plain create per event."""
    with pocketbase() as (pb, _data):
        kb = KBStore(pb)
        tenant, _ = kb.ensure_tenant("kosten-bench")
        users = _users(pb, tenant.id, 20, "kost")
        events = _events(PERSIST_EVENTS, tenant.id, users, seed=1)
        rows = [BatchRequest.create("outbox", {"type": OUTBOX_COST, "status": "pending", "attempts": 0,
                                               "payload": {"turn_id": e.turn_id, "tenant": e.tenant,
                                                           "events": [e.as_dict()]}}) for _day, e in events]
        for start in range(0, len(rows), 400):
            pb.batch(rows[start:start + 400])
        started = time.perf_counter()
        stats = CostPersister(pb).drain()
        persister = stats.events / (time.perf_counter() - started)
        assert stats.events == PERSIST_EVENTS and stats.failed_rows == 0

        baseline_tenant, _ = kb.ensure_tenant("kosten-basis")
        plain = _events(PERSIST_EVENTS, baseline_tenant.id, users, seed=2)
        started = time.perf_counter()
        for _day, e in plain:
            pb.create("ai_cost_events", {**e.as_dict(), "user": e.user})
        baseline = PERSIST_EVENTS / (time.perf_counter() - started)
    return persister, baseline


def _load(pb: PocketBase, tenant_id: str, users: list[str], n: int, seed: int) -> None:
    """n events and their daily rollup, written in bulk (the persister's own speed is measured above)."""
    events = _events(n, tenant_id, users, seed)
    requests = [BatchRequest.create("ai_cost_events", {**e.as_dict(), "user": e.user}) for _d, e in events]
    for start in range(0, len(requests), 400):
        pb.batch(requests[start:start + 400])
    rollup: dict[tuple, dict] = defaultdict(lambda: defaultdict(float))
    for day, e in events:
        row = rollup[(day, e.user, e.source, e.model)]
        row["events"] += 1
        row["input_tokens"] += e.usage.input_tokens
        row["output_tokens"] += e.usage.output_tokens
        row["cache_write_tokens"] += e.usage.cache_write_tokens
        row["cache_read_tokens"] += e.usage.cache_read_tokens
        row["cost_usd"] += e.cost_usd
        row["credits"] += e.credits
    puts = [BatchRequest("PUT", "/api/collections/ai_cost_daily/records",
                         {"id": rollup_id(tenant_id, day, user, source, model), "tenant": tenant_id, "day": day,
                          "user": user, "source": source, "model": model,
                          **{k: (int(v) if k.endswith("tokens") or k == "events" else round(v, 9)) for k, v in vals.items()}})
            for (day, user, source, model), vals in rollup.items()]
    for start in range(0, len(puts), 400):
        pb.batch(puts[start:start + 400])


def _page_loads(url: str, email: str, password: str) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url + "/admin/costs")
        page.fill("#email", email)
        page.fill("#password", password)
        page.click("#sign-in")
        page.wait_for_selector("#cost-per-day .recharts-bar-rectangle", timeout=120_000)
        for i in range(PAGE_LOADS + 1):
            started = time.perf_counter()
            page.goto(url + "/admin/costs")
            page.wait_for_selector("#cost-per-day .recharts-bar-rectangle", timeout=120_000)
            if i:  # the first is a warm-up
                times.append(time.perf_counter() - started)
        browser.close()
    return times


def _page_at_scale() -> list[str]:
    import os

    password = os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026")
    rows = []
    with served_app() as (url, pb, _data):
        kb = KBStore(pb)
        sizes = {"demo": 1_000, "acme": 100_000}
        for slug, n in sizes.items():
            tenant = kb.require_tenant(slug)
            _load(pb, tenant.id, _users(pb, tenant.id, 50, f"bench-{slug}-"), n, seed=n)
        today = datetime.now(timezone.utc).date()
        since = today.replace(day=1) if today.day >= 28 else today - timedelta(days=27)
        for slug, admin in (("demo", "admin@example.com"), ("acme", "admin@acme.example")):
            tenant = kb.require_tenant(slug)
            reports = CostReports(pb)
            rollup_ms = []
            for _ in range(PAGE_LOADS):
                started = time.perf_counter()
                reports.report(tenant, since, today)
                rollup_ms.append(time.perf_counter() - started)
            started = time.perf_counter()
            naive = sum(r["cost_usd"] for r in pb.iter_all("ai_cost_events", filter=f'tenant = "{tenant.id}"',
                                                           fields="cost_usd"))
            naive_s = time.perf_counter() - started
            loads = _page_loads(url, admin, password)
            rows.append(f"| {sizes[slug]:,} | {ms(p50(loads))} ({ms(p95(loads))}) | {ms(statistics.median(rollup_ms))} "
                        f"| {naive_s * 1000:.0f} ms (USD {naive:.2f}) |")
    return rows


def run() -> str:
    persister, baseline = _persist_throughput()
    rows = _page_at_scale()
    return "\n".join([
        f"### Cost events persisted through the outbox ({PERSIST_EVENTS:,} events, one per outbox row)",
        "",
        "| path | events/s |",
        "|---|---|",
        f"| `CostPersister.drain()`: event + daily rollup upsert + credit debit in one transaction, idempotent | "
        f"{persister:.0f} |",
        f"| baseline: one plain create per event (no rollup, no debit, no dedupe) | {baseline:.0f} |",
        f"| persister / baseline | {persister / baseline:.2f} |",
        "",
        f"### `/admin/costs` at 1,000 and 100,000 events in the range ({PAGE_LOADS} loads after a warm-up, "
        "headless Chromium 1400x900, until the day chart is drawn)",
        "",
        "| events in range | page load p50 (p95) | report from the rollup, p50 | summing every event row instead |",
        "|---|---|---|---|",
        *rows,
    ])
