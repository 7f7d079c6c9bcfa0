"""Several backend workers (issue 17): the load benchmark's concurrent chats against `r42 serve
--workers 1` and `--workers 2` in the same run, with a fake model that answers at once (so the work is
R42's own: guard, retrieval with the query embedding, prompt, stream). Chats per second = chats done /
wall time of a burst of CONCURRENT chats of CONCURRENT users; ROUNDS bursts per setting, median."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

from bench.bench_load import _chat, _users
from bench.common import ms, p50, p95, served_app
from tests.fakes.anthropic_api import FakeAnthropic

CONCURRENT = 100
ROUNDS = 5
# (label, workers, serve args): one worker as `make run` has it (embedded Chroma), one worker on the Chroma
# server (the same infrastructure as two workers: the fair baseline for the ratio), two workers.
SETTINGS = (("1 worker, embedded Chroma", 1, ()), ("1 worker, Chroma server", 1, ("--chroma-server",)),
            ("2 workers, Chroma server", 2, ()))


async def _bursts(url: str, tokens: list[str]) -> dict:
    # a new connection per chat, as users on their own machines make: the kernel spreads them over the workers
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=180, limits=limits) as client:
        for i in range(4):  # every worker loads its embedding model and warms up
            await asyncio.gather(*(_chat(client, url, t, f"Wat is de AOW? warm {i}") for t in tokens[:8]))
        rates, firsts, dones, errors = [], [], [], 0
        for r in range(ROUNDS):
            started = time.perf_counter()
            results = await asyncio.gather(*(_chat(client, url, t, f"Hoe werkt waardeoverdracht? {r}-{i}")
                                             for i, t in enumerate(tokens[:CONCURRENT])))
            wall = time.perf_counter() - started
            errors += sum(1 for _f, _d, status, last in results if status != 200 or last != "done")
            rates.append(CONCURRENT / wall)
            firsts += [x[0] for x in results]
            dones += [x[1] for x in results]
    return {"rate": statistics.median(rates), "rates": rates, "first": firsts, "done": dones, "errors": errors}


def run() -> str:
    fake = FakeAnthropic().start()
    out = {}
    try:
        for label, workers, extra in SETTINGS:
            # limits high enough that no chat is refused: this measures throughput, not the rate limiter
            with served_app("--workers", str(workers), *extra, ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=fake.url,
                            R42_CHAT_PER_MINUTE="6000", R42_CHAT_BURST="500", R42_APP_COSTS="0") as (url, pb, _d):
                tokens = _users(pb, CONCURRENT)
                out[label] = asyncio.run(_bursts(url, tokens))
    finally:
        fake.stop()
    rows = [f"| {label} | {r['rate']:.1f} | {', '.join(f'{x:.1f}' for x in r['rates'])} | {ms(p50(r['first']))} | "
            f"{ms(p95(r['first']))} | {ms(p50(r['done']))} | {ms(p95(r['done']))} | {r['errors']} |"
            for label, r in out.items()]
    one, server, two = (out[label]["rate"] for label, _w, _e in SETTINGS)
    return "\n".join([
        f"### Several backend workers: {CONCURRENT} concurrent chats, `r42 serve --workers 1` vs `--workers 2`",
        "",
        f"{ROUNDS} bursts of {CONCURRENT} chats of {CONCURRENT} users per setting, in one run, each chat on a new "
        "connection; a fake model that answers at once; with 2 workers the embedded Redis holds the sessions.",
        "",
        "| setting | chats/s (median) | chats/s per burst | first event p50 | p95 | done p50 | p95 | errors |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"**Ratio 2 workers / 1 worker on the same Chroma server: {two / server:.2f}x chats per second** "
        f"(2 workers / 1 worker as `make run` has it: {two / one:.2f}x).",
    ])
