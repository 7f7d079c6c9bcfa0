"""Hostile tenant (issue 44): another tenant's chat while one tenant's admin opens a hostile topic and floods
imports, and the backend's memory under stalled uploads, side by side with the commit before issue 44.

`r42 serve` as `make run` starts it (one backend process), with a fake model that answers at once, so every second
measured is R42's own. Three phases per app:

- **calm**: learners of tenant `demo` chat one after another (`CHATS` chats over `USERS` users, each question its
  own, so no query cache answers); the demo admin uploads a one-line text file (`UPLOADS` times).
- **hostile**: the acme admin writes two topics through PocketBase, one the issue's attack (a 20 KB table-rule line),
  one a 19,990-digit run, three Chromium tabs signed in as acme's learner reload their pages without pause, and a
  process of the acme admin posts four 1.1 MB nested-`div` HTML files at a time to `/api/kb/documents`, again and
  again. Meanwhile the same chats and uploads of tenant `demo` as in the calm phase.
- **stalled uploads**: four connections of the acme admin to `/api/kb/documents` each declare 100 MB and send one
  byte short of it, then stall; the backend process's resident memory before, while they stall, and after.

Two machines on one box: the app (the whole `r42 serve` tree: backend, PocketBase, parse children) is pinned to the
first core, and everything of the clients (this process, the attacker's Chromium and upload flood, the learners'
chats) to the second, the browser at the lowest priority. Without that, the attacker's browser burns the app's cores
(three tabs reloading took an ordinary topic's readers to 3x as well: the browser's cost, not the app's), which the
attacker's own machine would pay. A reference phase, the same three tabs reloading two ordinary topics, separates
what the hostile content costs from what three busy tabs cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import queue
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx
import psutil

from bench.bench_load import _chat_raw
from bench.common import CHROMIUM_ARGS, ROOT, baseline_checkout, ms, p50, p95, served_app
from tests.fakes.anthropic_api import FakeAnthropic

BASELINE = "504b8fb"  # main before issue 44
USERS = 12
CHATS = 36
UPLOADS = 4
TABS = 3
FLOOD_FILES = 4
STALLED = 4
STALL_BYTES = 100 * 1024 * 1024
APP_CORE, CLIENT_CORE = 0, 1
PASSWORD = "bench-pass-1"
DEMO_PASSWORD = os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026")
HOSTILE_SLUG = "vijandig-onderwerp"
# The topic (a 20 KB table rule line; topic content holds at most 20,000 characters); a second topic holds
# the 19,990-digit run the injection markers read when a turn quotes it.
ORDINARY = ["magazijnveiligheid", "heftruckcertificaat"]  # two of acme's own topics (seed_data/acme.json)
HOSTILE = {HOSTILE_SLUG: "| a |\n|--" + " " * 19950 + "x", "vijandige-cijfers": "7" * 19990}


def _nested_html() -> bytes:
    depth = 100_000
    return (b"<html><body>" + b"<div>" * depth + b"x" + b"</div>" * depth + b"</body></html>")


def _learners(pb, n: int) -> list[str]:
    demo = pb.first("tenants", 'slug = "demo"')
    tokens = []
    for i in range(n):
        email = f"hostile{i}@bench.example"
        if pb.first("users", f'email = "{email}"') is None:
            pb.create("users", {"email": email, "password": PASSWORD, "passwordConfirm": PASSWORD,
                                "name": f"Bench {i}", "role": "learner", "tenant": demo["id"], "verified": True})
        tokens.append(pb.send("POST", "/api/collections/users/auth-with-password",
                              body={"identity": email, "password": PASSWORD})["token"])
    return tokens


def _token(pb, email: str) -> str:
    return pb.send("POST", "/api/collections/users/auth-with-password",
                   body={"identity": email, "password": DEMO_PASSWORD})["token"]


def _upload(url: str, token: str, name: str, data: bytes, timeout: float = 300) -> tuple[float, int]:
    started = time.perf_counter()
    resp = httpx.post(f"{url}/api/kb/documents", headers={"Authorization": f"Bearer {token}"},
                      files=[("files", (name, data, "text/plain"))], timeout=timeout)
    return time.perf_counter() - started, resp.status_code


def _flood_process(url: str, token: str, stop, out) -> None:
    """The acme admin's import flood: FLOOD_FILES nested-div files at a time, again and again, until `stop`."""
    os.nice(19)  # the attacker's machine, not ours
    data = _nested_html()
    statuses: list[int] = []

    def one(i: int, n: int) -> None:
        try:
            resp = httpx.post(f"{url}/api/kb/documents", headers={"Authorization": f"Bearer {token}"},
                              files=[("files", (f"nest-{n}-{i}.html", data, "text/html"))], timeout=120)
            statuses.append(resp.status_code)
        except httpx.HTTPError:
            statuses.append(0)

    n = 0
    while not stop.is_set():
        threads = [threading.Thread(target=one, args=(i, n)) for i in range(FLOOD_FILES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        n += 1
    out.put(statuses)


def _tabs(url: str, slugs: list[str], stop: threading.Event, loads: list[int]) -> None:
    """TABS Chromium tabs signed in as acme's learner, each reloading a hostile topic's page until `stop`."""
    from playwright.sync_api import sync_playwright

    wrapper = Path(tempfile.mkdtemp(prefix="r42-bench-")) / "chromium"
    # the attacker's machine, not ours: the clients' core, the lowest priority
    wrapper.write_text(f'#!/bin/sh\nexec taskset -c {CLIENT_CORE} nice -n 19 /usr/bin/chromium "$@"\n')
    wrapper.chmod(0o755)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(wrapper), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1000, "height": 700})
        first = context.new_page()
        first.goto(url + "/")
        first.fill("#email", "learner@acme.example")
        first.fill("#password", DEMO_PASSWORD)
        first.click("#sign-in")
        first.wait_for_selector("#user-menu", timeout=120_000)
        pages = [first] + [context.new_page() for _ in range(TABS - 1)]
        for i, page in enumerate(pages):
            page.goto(f"{url}/topics/{slugs[i % len(slugs)]}", wait_until="commit")
        while not stop.is_set():
            for page in pages:
                try:
                    page.reload(wait_until="commit", timeout=30_000)
                    loads[0] += 1
                except Exception:  # noqa: BLE001 - a reload cut short by the next one
                    pass
            time.sleep(0.5)
        browser.close()


async def _chats(url: str, tokens: list[str], label: str) -> list[float]:
    done = []
    for i in range(CHATS):
        _first, took, status, last = await _chat_raw(url, tokens[i % len(tokens)],
                                                     f"Wat is de dekkingsgraad van het fonds? ({label} {i})")
        if status == 200 and last == "done":
            done.append(took)
        await asyncio.sleep(0.3)
    return done


def _backend(root_pid: int) -> psutil.Process:
    """The backend worker: the process of `r42 serve`'s tree that serves the app (the largest Python child)."""
    tree = [p for p in psutil.Process(root_pid).children(recursive=True) if "python" in p.name().lower()
            or "granian" in " ".join(p.cmdline()).lower()]
    return max(tree, key=lambda p: p.memory_info().rss)


def _stalled(url: str, token: str, pid: int) -> dict:
    """STALLED uploads that declare STALL_BYTES and send one byte short, then stall: the backend's RSS (MB)."""
    import socket

    host, port = urlparse(url).hostname, urlparse(url).port
    backend = _backend(pid)
    before = backend.memory_info().rss / 2**20
    boundary = "benchboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"groot.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\n").encode()
    socks, status = [], []
    chunk = b"a" * (1024 * 1024)
    for _ in range(STALLED):
        s = socket.create_connection((host, port))
        s.sendall((f"POST /api/kb/documents HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
                   f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {STALL_BYTES}\r\n\r\n"
                   ).encode() + head)
        socks.append(s)
    sent = [len(head)] * STALLED
    s_timeout = 0.0
    for i, s in enumerate(socks):
        s.settimeout(5)
        try:
            while sent[i] < STALL_BYTES - 1:
                n = min(len(chunk), STALL_BYTES - 1 - sent[i])
                s.sendall(chunk[:n])
                sent[i] += n
        except OSError:  # the server stopped reading or answered: it refused the upload
            s_timeout += 1
    time.sleep(5)
    during = backend.memory_info().rss / 2**20
    time.sleep(25)
    later = backend.memory_info().rss / 2**20
    for s in socks:
        try:
            s.settimeout(2)
            status.append(s.recv(200).split(b"\r\n", 1)[0].decode("latin-1", "replace"))
        except OSError:
            status.append("(no answer)")
        s.close()
    time.sleep(3)
    after = backend.memory_info().rss / 2**20
    return {"before": before, "during": during, "later": later, "after": after,
            "sent_mb": sum(sent) / 2**20, "cut": int(s_timeout), "answers": status}


def _pin(pid: int) -> None:
    """The app's process tree (every thread) on APP_CORE, this process (and what it starts) on CLIENT_CORE; what the
    app starts later inherits its core."""
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        with contextlib.suppress(psutil.Error, OSError):
            for thread in proc.threads():
                os.sched_setaffinity(thread.id, {APP_CORE})
    os.sched_setaffinity(0, {CLIENT_CORE})


def _attack(url: str, slugs: list[str], admin_token: str | None, tokens: list[str], label: str,
            meanwhile=None) -> dict:
    """The tabs reloading `slugs` (and, with an admin token, the import flood) while the learners chat, and then
    `meanwhile()` (its result under "meanwhile")."""
    stop_tabs, loads = threading.Event(), [0]
    tabs = threading.Thread(target=_tabs, args=(url, slugs, stop_tabs, loads), daemon=True)
    tabs.start()
    ctx = multiprocessing.get_context("spawn")
    stop_flood, out = ctx.Event(), ctx.Queue()
    flood = ctx.Process(target=_flood_process, args=(url, admin_token, stop_flood, out)) if admin_token else None
    if flood is not None:
        flood.start()
    time.sleep(20)  # the tabs signed in and reloading, the first flood's files in the parser
    started = time.perf_counter()
    chats = asyncio.run(_chats(url, tokens, label))
    seconds = time.perf_counter() - started
    extra = meanwhile() if meanwhile is not None else None
    lag = httpx.get(f"{url}/api/health", timeout=10).json()["event_loop_lag"]
    stop_tabs.set()
    stop_flood.set()
    tabs.join(120)
    statuses: list[int] = []
    if flood is not None:
        try:
            statuses = out.get(timeout=300)
        except queue.Empty:  # a post still waiting for its answer: the flood is over for us
            flood.terminate()
        flood.join(60)
    return {"chats": chats, "lag": lag, "loads": loads[0], "seconds": seconds, "flood": statuses, "meanwhile": extra}


def _measure(url: str, pb, pid: int) -> dict:
    if (os.cpu_count() or 1) > CLIENT_CORE:
        _pin(pid)
    tokens = _learners(pb, USERS)
    acme_admin = _token(pb, "admin@acme.example")
    demo_admin = _token(pb, "admin@example.com")
    # one chat per user first: the first question of a user warms its caches
    asyncio.run(_chats(url, tokens, "warm"))
    calm = asyncio.run(_chats(url, tokens, "calm"))
    calm_uploads = [_upload(url, demo_admin, f"regel-rustig-{i}.txt", f"Een regel tekst {i}.".encode())
                    for i in range(UPLOADS)]
    lag_calm = httpx.get(f"{url}/api/health", timeout=10).json()["event_loop_lag"]

    acme = pb.first("tenants", 'slug = "acme"')
    for slug, content in HOSTILE.items():  # written by acme's admin through PocketBase, as the attacker did
        if pb.first("topics", f'slug = "{slug}" && tenant = "{acme["id"]}"') is None:
            httpx.post(f"{pb.base_url}/api/collections/topics/records", headers={"Authorization": acme_admin},
                       json={"tenant": acme["id"], "slug": slug, "label": slug.replace("-", " ").capitalize(),
                             "type": "concept", "description": "Een onderwerp van een vijandige beheerder.",
                             "content": content}, timeout=30).raise_for_status()
    ordinary = _attack(url, ORDINARY, None, tokens, "gewoon")
    time.sleep(5)
    attack = _attack(url, list(HOSTILE), acme_admin, tokens, "vijandig", lambda: [
        _upload(url, demo_admin, f"regel-vijandig-{i}.txt", f"Nog een regel {i}.".encode()) for i in range(UPLOADS)])
    hostile_uploads = attack["meanwhile"]
    time.sleep(5)
    stalled = _stalled(url, acme_admin, pid)
    return {"calm": calm, "ordinary": ordinary, "attack": attack, "calm_uploads": calm_uploads,
            "hostile_uploads": hostile_uploads, "lag_calm": lag_calm, "stalled": stalled}


def _measure_app(root, fake) -> dict:
    env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.url, "R42_APP_INDEXER": "1"}
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    with served_app(root=root, **env) as (url, pb, data):
        return _measure(url, pb, _serve_pid(data))


def _serve_pid(data) -> int:
    """The pid of the `r42 serve` whose data dir is `data` (served_app keeps the process to itself)."""
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmd = proc.info["cmdline"] or []
            if len(cmd) >= 2 and cmd[-1] == "serve" and (proc.info["environ"] or {}).get("R42_DATA_DIR") == str(data):
                return proc.pid
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
    raise RuntimeError("r42 serve not found")


def _lag(lag: dict) -> str:
    return f"{lag['p50_ms']} / {lag['p99_ms']} / {lag['max_ms']} ms"


def _rows(m: dict) -> list[tuple[str, str]]:
    calm, ordinary, attack = m["calm"], m["ordinary"]["chats"], m["attack"]["chats"]
    up_calm = [t for t, _s in m["calm_uploads"]]
    up_hostile = [t for t, _s in m["hostile_uploads"]]
    s = m["stalled"]
    flood = m["attack"]["flood"]
    return [
        (f"demo learners' chats, calm: done p50 / p95 ({len(calm)} of {CHATS} answered)",
         f"{ms(p50(calm))} / {ms(p95(calm))}"),
        (f"the same while 3 tabs of acme reload two ordinary topics ({len(ordinary)} answered)",
         f"{ms(p50(ordinary))} / {ms(p95(ordinary))}"),
        ((f"the same during the attack: 3 tabs reload the hostile topics, acme's admin floods imports "
         f"({len(attack)} answered)"), f"{ms(p50(attack))} / {ms(p95(attack))}"),
        ("**p95 during the attack / p95 calm** (ordinary tabs / calm)",
         f"**{p95(attack) / p95(calm):.2f}x** ({p95(ordinary) / p95(calm):.2f}x)"),
        (f"demo admin's one-line upload, calm / during the attack (median of {UPLOADS}; statuses)",
         f"{ms(p50(up_calm))} / {ms(p50(up_hostile))} ({', '.join(str(s) for _t, s in m['hostile_uploads'])})"),
        ("event-loop lag over the last minute: calm; ordinary tabs; attack (p50 / p99 / max)",
         f"{_lag(m['lag_calm'])}; {_lag(m['ordinary']['lag'])}; {_lag(m['attack']['lag'])}"),
        ("page loads by the 3 tabs: ordinary / hostile; acme's flood: files answered (statuses)",
         (f"{m['ordinary']['loads']} in {m['ordinary']['seconds']:.0f} s / {m['attack']['loads']} in "
          f"{m['attack']['seconds']:.0f} s; {len(flood)} files "
          f"({', '.join(f'{c}×{flood.count(c)}' for c in sorted(set(flood)))})")),
        (f"backend RSS before / while {STALLED} uploads of 100 MB stall / 30 s later / after they close (MB)",
         f"{s['before']:.0f} / {s['during']:.0f} / {s['later']:.0f} / {s['after']:.0f}"),
        ("stalled uploads: MB the server took; answers",
         f"{s['sent_mb']:.0f} MB; {'; '.join(a for a in s['answers'])}"),
    ]


def run() -> str:
    """This checkout and, side by side in the same run, main before issue 44 (R42_BENCH_HOSTILE_BASELINE=<commit>
    for another, =none for this checkout alone)."""
    chosen = os.environ.get("R42_BENCH_HOSTILE_BASELINE", BASELINE).strip()
    baseline = "" if chosen.lower() in ("", "none") else chosen
    fake = FakeAnthropic().start()
    runs: list[tuple[str, list[tuple[str, str]]]] = []
    try:
        if baseline:
            with baseline_checkout(baseline) as tree:
                runs.append((f"before issue 44 ({baseline[:8]})", _rows(_measure_app(tree, fake))))
        runs.append(("this checkout", _rows(_measure_app(ROOT, fake))))
    finally:
        fake.stop()
    lines = ["### Hostile tenant: another tenant's chat and memory while one tenant attacks (issue 44)", "",
             "| measure | " + " | ".join(label for label, _ in runs) + " |", "|---|" + "---|" * len(runs)]
    for i, (measure, _) in enumerate(runs[0][1]):
        lines.append(f"| {measure} | " + " | ".join(rows[i][1] for _, rows in runs) + " |")
    return "\n".join(lines)
