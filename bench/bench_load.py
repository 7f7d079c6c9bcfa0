"""Load: `r42 serve` as `make run` starts it, with a fake model that answers at once (so every second is
R42's own), against its single-request baseline in the same run: 50 concurrent chats of 50 users; one
user's flood of 300 requests while another user chats; and the event loop's lag with 20 open graph
pages polling. The chats are sent on raw sockets (`_chat_raw`), as the flood is: an httpx client's CPU on these
2 cores would be measured as R42's."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
from urllib.parse import urlparse

import httpx

from bench.common import CHROMIUM_ARGS, ROOT, baseline_checkout, load_baseline, ms, p50, p95, served_app
from tests.fakes.anthropic_api import FakeAnthropic

USERS = 50
MANY = 200
FLOOD = 300
FLOOD_ROUNDS = 9
GRAPH_PAGES = 20
PASSWORD = "bench-pass-1"


def _users(pb, n: int) -> list[str]:
    """n learners of tenant demo, signed in through the superuser connection (as the app does): tokens."""
    demo = pb.first("tenants", 'slug = "demo"')
    tokens = []
    for i in range(n):
        email = f"load{i}@bench.example"
        if pb.first("users", f'email = "{email}"') is None:
            pb.create("users", {"email": email, "password": PASSWORD, "passwordConfirm": PASSWORD, "name": f"Load {i}",
                                "role": "learner", "tenant": demo["id"], "verified": True})
        tokens.append(pb.send("POST", "/api/collections/users/auth-with-password",
                              body={"identity": email, "password": PASSWORD})["token"])
    return tokens


async def _chat(client: httpx.AsyncClient, url: str, token: str, question: str) -> tuple[float, float, int, str]:
    """(first event s, done s, status, last event type) of one streamed chat."""
    started = time.perf_counter()
    first = done = 0.0
    last = ""
    async with client.stream("POST", f"{url}/api/chat", headers={"Authorization": f"Bearer {token}"},
                             json={"messages": [{"role": "user", "content": question}]}) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return time.perf_counter() - started, time.perf_counter() - started, resp.status_code, ""
        async for line in resp.aiter_lines():
            if line.startswith("data: "):
                if not first:
                    first = time.perf_counter() - started
                last = json.loads(line[6:])["type"]
        done = time.perf_counter() - started
    return first, done, 200, last


async def _chat_raw(url: str, token: str, question: str) -> tuple[float, float, int, str]:
    """(first event s, done s, status, last event type) of one streamed chat, on a raw socket of its own (HTTP/1.1,
    chunked body decoded here): an httpx client spends ~1-3 ms of CPU per streamed chat, which on these 2 cores,
    200 chats at once, would be 10-20% of what the bench measures. A load client elsewhere costs R42 nothing."""
    parsed = urlparse(url)
    body = json.dumps({"messages": [{"role": "user", "content": question}]}).encode()
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port)
    try:
        writer.write((f"POST /api/chat HTTP/1.1\r\nHost: {parsed.netloc}\r\nAuthorization: Bearer {token}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                      ).encode() + body)
        status = int((await reader.readline()).split()[1])
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        first, last, pending = 0.0, "", b""
        chunked = headers.get("transfer-encoding", "") == "chunked"
        while True:
            if chunked:
                size = int((await reader.readline()).split(b";")[0], 16)
                data = await reader.readexactly(size + 2) if size else b""
                data = data[:-2]
            else:
                data = await reader.read(65536)
            if not data:
                break
            pending += data
            while b"\n\n" in pending:
                event, pending = pending.split(b"\n\n", 1)
                if event.startswith(b"data: "):
                    first = first or time.perf_counter() - started
                    last = json.loads(event[6:])["type"]
        done = time.perf_counter() - started
        return (first or done), done, status, last
    finally:
        writer.close()


def _flood_process(url: str, token: str, n: int, ready, go, out) -> None:
    """n requests at once on n open connections, on raw sockets: an httpx client spends ~1 ms of CPU
    per request, which on 2 cores would measure the client, not R42."""
    parsed = urlparse(url)
    body = json.dumps({"messages": [{"role": "user", "content": "spam"}]}).encode()
    request = (f"POST /api/chat HTTP/1.1\r\nHost: {parsed.netloc}\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
               ).encode() + body

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[float, int]:
        started = time.perf_counter()
        writer.write(request)
        status = int((await reader.readline()).split()[1])
        await reader.read()  # Connection: close: the whole response
        took = time.perf_counter() - started
        writer.close()
        return took, status

    async def main() -> list[tuple[float, int]]:
        conns = [await asyncio.open_connection(parsed.hostname, parsed.port) for _ in range(n)]
        ready.set()
        await asyncio.get_running_loop().run_in_executor(None, go.wait)
        return await asyncio.gather(*(one(r, w) for r, w in conns))

    out.put(asyncio.run(main()))


async def _measure(url: str, tokens: list[str]) -> dict:
    cold = await _chat_raw(url, tokens[-1], "Wat is een pensioenregeling?")  # the first chat after ready
    singles = []
    for i in range(7):  # the baseline: one chat at a time
        first, done, status, last = await _chat_raw(url, tokens[i % len(tokens)], f"Wat is de AOW? ({i})")
        assert status == 200 and last == "done", (status, last)
        singles.append((first, done))
    await asyncio.sleep(6)  # let those users' buckets fill again
    results = await asyncio.gather(*(_chat_raw(url, t, f"Hoe werkt waardeoverdracht? {i}")
                                     for i, t in enumerate(tokens[:USERS])))
    errors = sum(1 for _f, _d, status, last in results if status != 200 or last != "done")
    await asyncio.sleep(6)
    many = await asyncio.gather(*(_chat_raw(url, t, f"Wat is een pensioenregeling? {i}")
                                  for i, t in enumerate(tokens[:MANY])))
    many_errors = sum(1 for _f, _d, status, last in many if status != 200 or last != "done")

    flooder, other = tokens[0], tokens[1]
    calms, durings, floods, totals = [], [], [], []
    for n in range(FLOOD_ROUNDS):  # one chat is one sample: the median of a few floods
        await asyncio.sleep(6)
        # a question of its own each time: a question asked before is answered from the query cache
        calm = await _chat_raw(url, other, f"Wat is de dekkingsgraad? (rustig {n})")
        await asyncio.sleep(6)
        # The flooder is another process (as another machine would be), so this loop only runs the other chat.
        ctx = multiprocessing.get_context("spawn")
        ready, go, out = ctx.Event(), ctx.Event(), ctx.Queue()
        proc = ctx.Process(target=_flood_process, args=(url, flooder, FLOOD, ready, go, out))
        proc.start()
        await asyncio.get_running_loop().run_in_executor(None, ready.wait)
        await asyncio.sleep(1)
        go.set()
        flood_started = time.perf_counter()
        during = await _chat_raw(url, other, f"Wat is de dekkingsgraad? (vloed {n})")
        flood = await asyncio.get_running_loop().run_in_executor(None, out.get)
        totals.append(time.perf_counter() - flood_started)
        proc.join()
        calms.append(calm[1])
        durings.append(during[1])
        floods.append(flood)
    refusals = [t for t, status in floods[0] if status == 429]  # the first flood's refusals, as before
    return {"single_first": [s[0] for s in singles], "single_done": [s[1] for s in singles],
            "first": [r[0] for r in results], "done": [r[1] for r in results], "errors": errors,
            "many_first": [r[0] for r in many], "many_done": [r[1] for r in many], "many_errors": many_errors,
            "refusals": refusals, "refused": len(refusals), "flood_total": p50(totals), "calm": p50(calms),
            "during": p50(durings), "ratios": [d / c for c, d in zip(calms, durings)], "cold": cold[0]}


def _graph_lag(url: str, pb_url: str) -> dict:
    """Open GRAPH_PAGES graph pages (they poll every 3 s), then a minute of polling; the backend's own
    loop-lag monitor (a 100 ms sleep, over the last minute)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1000, "height": 700})
        first = context.new_page()
        first.goto(url + "/graph")
        first.fill("#email", "admin@example.com")
        first.fill("#password", os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026"))
        first.click("#sign-in")
        first.wait_for_selector("#user-menu")
        pages = [first] + [context.new_page() for _ in range(GRAPH_PAGES - 1)]
        for page in pages[1:]:
            page.goto(url + "/graph")
        for page in pages:
            page.wait_for_selector("#user-menu", timeout=120_000)
        opening = httpx.get(f"{url}/api/health", timeout=10).json()["event_loop_lag"]  # the last minute: the opening
        time.sleep(62)  # the monitor keeps one minute: now it holds only the polling
        lag = httpx.get(f"{url}/api/health", timeout=10).json()["event_loop_lag"]
        browser.close()
    return {"opening": opening, "during": lag}


def _measure_app(root, fake) -> tuple[dict, dict]:
    env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.url}
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    with served_app(root=root, **env) as (url, pb, _data):
        tokens = _users(pb, MANY)
        load = asyncio.run(_measure(url, tokens))
        lag = _graph_lag(url, pb.base_url)
    return load, lag


def _rows(load: dict, lag: dict) -> list[tuple[str, str]]:
    """(measure, "p50 / p95 …") for one app's run."""
    return [
        ("the first chat after ready, first event (a warm one: the next row)", ms(load["cold"])),
        ("one chat at a time, first event (7 chats)", f"{ms(p50(load['single_first']))} / {ms(p95(load['single_first']))}"),
        ("one chat at a time, done", f"{ms(p50(load['single_done']))} / {ms(p95(load['single_done']))}"),
        (f"{USERS} concurrent chats of {USERS} users, first event",
         f"{ms(p50(load['first']))} / {ms(p95(load['first']))}, {load['errors']} errors"),
        (f"{USERS} concurrent chats, done", f"{ms(p50(load['done']))} / {ms(p95(load['done']))}"),
        (f"{MANY} concurrent chats of {MANY} users, first event",
         f"{ms(p50(load['many_first']))} / {ms(p95(load['many_first']))}, {load['many_errors']} errors"),
        (f"{MANY} concurrent chats, done", f"{ms(p50(load['many_done']))} / {ms(p95(load['many_done']))}"),
        (f"one user floods {FLOOD} requests: each 429 (the first flood; all answered in: the median; since issue 26 "
         "the gate holds a flood's refusals 0.1-0.3 s)",
         f"{ms(p50(load['refusals']))} / {ms(p95(load['refusals']))}, {load['refused']} refused, all in "
         f"{ms(load['flood_total'])}"),
        (f"another user's chat: calm / during the flood (medians of {FLOOD_ROUNDS} floods; each flood's ratio)",
         f"{ms(load['calm'])} / {ms(load['during'])}: {load['during'] / load['calm']:.1f}x "
         f"({', '.join(f'{r:.1f}' for r in load['ratios'])})"),
        (f"event-loop lag, {GRAPH_PAGES} graph pages polling for a minute (p50 / p99 / max)",
         f"{lag['during']['p50_ms']} / {lag['during']['p99_ms']} / {lag['during']['max_ms']} ms"),
        (f"event-loop lag, the minute in which those {GRAPH_PAGES} pages opened",
         f"{lag['opening']['p50_ms']} / {lag['opening']['p99_ms']} / {lag['opening']['max_ms']} ms"),
    ]


def run() -> str:
    """This checkout and, side by side in the same run, the commit before issue 26's cuts (a git worktree served by
    this venv): R42_BENCH_BASELINE=<commit> for another, R42_BENCH_BASELINE=none for this checkout alone."""
    baseline = load_baseline()
    fake = FakeAnthropic().start()
    runs: list[tuple[str, list[tuple[str, str]]]] = []
    try:
        if baseline:
            with baseline_checkout(baseline) as tree:
                runs.append((f"baseline {baseline[:8]}", _rows(*_measure_app(tree, fake))))
        runs.append(("this checkout", _rows(*_measure_app(ROOT, fake))))
    finally:
        fake.stop()
    lines = ["### Load: `r42 serve` (one backend process) with a fake model that answers at once", "",
             "| measure (p50 / p95 unless said) | " + " | ".join(label for label, _ in runs) + " |",
             "|---|" + "---|" * len(runs)]
    for i, (measure, _) in enumerate(runs[0][1]):
        lines.append(f"| {measure} | " + " | ".join(rows[i][1] for _, rows in runs) + " |")
    return "\n".join(lines)
