"""Where a chat turn's time goes (issue 26): `r42 serve` with a fake model that answers at once, 50 learners,
rounds of 50 concurrent chats over POST /api/chat. Measured on the backend worker itself: its CPU time per
turn (psutil, the process's user+system time over the rounds), and a py-spy profile of the same rounds,
each sample put in the part of the turn it is in (the innermost R42 or library frame that names one).

    python -m bench turn-cpu                  # this checkout and 3cdbe6d (before issue 26), side by side, same run
    R42_BENCH_BASELINE=<commit> python -m bench turn-cpu   # against that commit instead
    R42_BENCH_BASELINE=none python -m bench turn-cpu       # this checkout alone

The baseline is a git worktree of that commit served by this venv (its code on PYTHONPATH first), so both run
on the same machine, data, users and load within minutes of each other.
"""

from __future__ import annotations

import asyncio
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from bench.bench_load import _chat, _users
from bench.common import ROOT, baseline_checkout, load_baseline, ms, p50, p95, served_app
from tests.fakes.anthropic_api import FakeAnthropic

USERS = 50
ROUNDS = 6
PROFILE_ROUNDS = 4
ANSWER = ["De AOW is het basispensioen van de overheid ", "[ref:1]", ". Je bouwt het op door in Nederland te ",
          "wonen ", "[ref:1]", "."] * 3  # 18 text deltas, as a short streamed answer has

# The part of a turn a stack is in: the first (innermost-first) frame whose file or function matches.
PARTS = [
    ("persisting the cost outbox", ("costs", "cost_outbox", "persist_cost", "record_usage")),
    ("token check (session)", ("_session", "verify_token", "auth_refresh", "services/store/auth.py")),
    ("guard lookups (capabilities, credit, quiz)", ("_guard", "check_turn", "effective", "quiz.py", "access.py",
                                                    "rate_limit", "shared_state.py")),
    ("retrieval (search, context)", ("kb_search", "build_kb_context", "retrieval", "lexical", "chromadb",
                                     "embed", "onnx", "passages.py", "relevance.py")),
    ("prompt building", ("system_blocks", "render_snippets", "fence.py", "core/chat.py", "injection")),
    ("the SDK client (anthropic, httpx)", ("anthropic/", "httpx/", "httpcore/", "h11/", "ssl.py")),
    ("streaming events (serialise, SSE)", ("to_json", "json/encoder", "json/__init__", "events.py",
                                           "StreamingResponse", "streaming")),
    ("chat turn (other)", ("chat/turn.py", "chat/tools.py")),
    ("PocketBase client (other)", ("store/pb.py",)),
    ("ASGI and Reflex", ("starlette/", "granian", "reflex/", "uvicorn/", "socketio", "engineio", "asyncio/",
                         "api.py", "selectors.py")),
]


def _worker(url_port: int) -> psutil.Process:
    """The backend worker: the process that listens on the app's port."""
    for proc in psutil.process_iter(["pid"]):
        try:
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr.port == url_port:
                    kids = [p for p in proc.children(recursive=True)
                            if any(c.status == psutil.CONN_LISTEN for c in _conns(p))]
                    return kids[0] if kids else proc
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    raise RuntimeError(f"no process listens on {url_port}")


def _listener(port: int) -> psutil.Process:
    """The process that listens on `port` itself (PocketBase: one Go process)."""
    for proc in psutil.process_iter(["pid"]):
        if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in _conns(proc)):
            return proc
    raise RuntimeError(f"no process listens on {port}")


def _conns(proc: psutil.Process) -> list:
    try:
        return proc.net_connections(kind="tcp")
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def _sys(proc: psutil.Process) -> float:
    return proc.cpu_times().system


async def _rounds(url: str, tokens: list[str], rounds: int, first: int = 0) -> list[tuple[float, float]]:
    """`rounds` rounds of every user asking at once, each question new (round numbers from `first`: a question
    asked before is answered from the query cache)."""
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=100)
    out = []
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        for r in range(first, first + rounds):
            results = await asyncio.gather(*(_chat(client, url, t, f"Wat is de AOW? {r}-{i}")
                                             for i, t in enumerate(tokens)))
            bad = [x for x in results if x[2] != 200 or x[3] != "done"]
            if bad:
                raise RuntimeError(f"{len(bad)} turns failed: {bad[:3]}")
            out += [(x[0], x[1]) for x in results]
            await asyncio.sleep(2.5)  # the users' rate-limit buckets fill again (R42_CHAT_BURST)
    return out


def _categorise(raw: Path) -> collections.Counter:
    """py-spy's raw (collapsed) stacks: one line per stack, `frame;frame;... count`, outermost first."""
    parts: collections.Counter = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not frames or not count.isdigit():
            continue
        innermost = frames[-1]
        if any(w in innermost for w in ("select (selectors", "epoll", "_worker (concurrent", "wait (threading",
                                        "_bootstrap_inner", "run_forever", "_run_once (asyncio")) and len(frames) < 12:
            continue  # idle: a thread waiting for work, the loop waiting for a socket
        # the first part (in PARTS' order) any frame of the stack is in: R42's own steps before the libraries
        # they call (a PocketBase lookup of the guard goes through httpx too)
        part = next((name for name, keys in PARTS if any(k in frame for frame in frames for k in keys)), "other")
        parts[part] += int(count)
    return parts


def _measure(root: Path, label: str, fake: FakeAnthropic) -> dict:
    env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.url, "R42_CHAT_PER_MINUTE": "600",
           "R42_CHAT_BURST": "20", "R42_MCP_ENABLED": "false"}
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    with served_app(root=root, **env) as (url, pb, _data):
        tokens = _users(pb, USERS)
        demo = pb.first("tenants", 'slug = "demo"')  # 550 turns: more than the demo's credit
        pb.update("tenants", demo["id"], {"credits_unlimited": True})
        worker = _worker(int(url.rsplit(":", 1)[1]))
        pocketbase = _listener(int(pb.base_url.rsplit(":", 1)[1]))
        asyncio.run(_rounds(url, tokens, 1))  # warm: connections, caches, the first-turn paths
        # CPU first, with nothing else on the machine (py-spy samples 40 threads 250 times a second: on two
        # cores its own reads took a core and made the worker's CPU per turn swing by a third between runs)
        me = psutil.Process()  # the bench itself: the load client and the fake model (a thread of this process)
        cpu0, sys0, pb0, me0, wall0 = _cpu(worker), _sys(worker), _cpu(pocketbase), _cpu(me), time.perf_counter()
        timings = asyncio.run(_rounds(url, tokens, ROUNDS, first=1))
        cpu1, sys1, pb1, me1, wall1 = _cpu(worker), _sys(worker), _cpu(pocketbase), _cpu(me), time.perf_counter()
        # then the profile, over rounds of their own
        raw = Path(os.environ.get("R42_BENCH_PROFILE_DIR") or tempfile.mkdtemp(prefix="r42-spy-")) / f"{label}.txt"
        py_spy = Path(sys.executable).parent / "py-spy"  # `make bench` installs it
        # R42_BENCH_SPY_GIL=1: only the thread holding the GIL, i.e. where the Python time goes (threads waiting
        # for the GIL look busy to py-spy otherwise)
        gil = ["--gil"] if os.environ.get("R42_BENCH_SPY_GIL") == "1" else []
        spy = subprocess.Popen([str(py_spy), "record", "--pid", str(worker.pid), "--rate", "250", "--format", "raw",
                                "--threads", "--nonblocking", *gil, "--output", str(raw)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if py_spy.exists() else None
        if spy is not None:
            time.sleep(1.5)
            asyncio.run(_rounds(url, tokens, PROFILE_ROUNDS, first=1 + ROUNDS))
            spy.send_signal(2)
            spy.wait(60)
        turns = len(timings)
        return {"cpu_ms": (cpu1 - cpu0) * 1000 / turns, "sys_ms": (sys1 - sys0) * 1000 / turns,
                "pb_ms": (pb1 - pb0) * 1000 / turns, "bench_ms": (me1 - me0) * 1000 / turns, "turns": turns,
                "wall": wall1 - wall0,
                "first": [t[0] for t in timings], "done": [t[1] for t in timings],
                "parts": _categorise(raw) if raw.exists() else collections.Counter()}


def run() -> str:
    fake = FakeAnthropic().start()
    runs: list[tuple[str, dict]] = []
    baseline = load_baseline()
    try:
        fake.reply_text(*ANSWER)
        fake.default = fake.scripts.pop()  # every turn gets this answer
        if baseline:
            with baseline_checkout(baseline) as tree:
                runs.append((f"baseline {baseline[:8]}", _measure(tree, "baseline", fake)))
        runs.append(("this checkout", _measure(ROOT, "now", fake)))
    finally:
        fake.stop()
    lines = [f"### A chat turn's cost: {USERS} concurrent chats x {ROUNDS} rounds, POST /api/chat, fake model "
             f"({len(ANSWER)} text deltas)", "",
             ("| code | CPU per turn (backend worker) | of which in the kernel | PocketBase's CPU per turn | "
              "the bench's CPU per turn (client and fake model) | first event p50 / p95 | done p50 / p95 | turns |"),
             "|---|---|---|---|---|---|---|---|"]
    for label, r in runs:
        lines.append(f"| {label} | {r['cpu_ms']:.1f} ms | {r['sys_ms']:.1f} ms | {r['pb_ms']:.1f} ms | "
                     f"{r['bench_ms']:.1f} ms | {ms(p50(r['first']))} / {ms(p95(r['first']))} | "
                     f"{ms(p50(r['done']))} / {ms(p95(r['done']))} | {r['turns']} |")
    if not all(sum(r["parts"].values()) for _label, r in runs):
        return "\n".join([*lines, "", "No profile: py-spy is not installed in this venv (`make bench` installs it)."])
    lines += ["", "Where the backend worker's busy samples are (py-spy, 250 Hz, all threads; idle waits left out):",
              "", "| part of the turn | " + " | ".join(label for label, _ in runs) + " |",
              "|---|" + "---|" * len(runs)]
    names = [name for name, _ in PARTS] + ["other"]
    for name in names:
        cells = []
        for _label, r in runs:
            total = sum(r["parts"].values()) or 1
            cells.append(f"{100 * r['parts'][name] / total:.0f}%")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
