"""The first answer after "R42 is running" (issue 25: it waited 12-19 s behind "R42 zoekt in de kennisbank…").
`r42 serve` now loads the embedding model and the tenants' indexes before it says it is ready
(services/runtime/warmup.py). Measured on restarts of one data dir whose demo KB is already indexed (as a
deployment restarts): the time from the "R42 is running" line to the first text and to `done` of an offline
answer over POST /api/chat, and a second question right after (the warm reference)."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import ROOT, free_port

STARTS = int(os.environ.get("R42_BENCH_STARTS", "3"))
QUESTIONS = ("Wat krijgen mijn kinderen als ik overlijd?", "Hoe werkt waardeoverdracht?")
PASSWORD = "bench-demo-pass-1"


def start(data: Path, indexer: bool, ports: tuple[int, int], rebuild: bool = False
          ) -> tuple[subprocess.Popen, str, str, float]:
    """`r42 serve` on `data` and `ports` (app, PocketBase; the same on every restart, as `make run` starts);
    `rebuild`: R42_FRONTEND_REBUILD=1, the frontend compiled and built again (every start before issue 49).
    Returns (process, app url, PocketBase url, seconds until "R42 is running")."""
    port, pb_port = ports
    env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PORT": str(port), "R42_PB_PORT": str(pb_port),
           "R42_APP_INDEXER": "1" if indexer else "0", "R42_DEMO_PASSWORD": PASSWORD,
           "R42_FRONTEND_REBUILD": "1" if rebuild else "0"}
    for name in ("R42_PB_URL", "ANTHROPIC_API_KEY"):  # our own PocketBase; offline answers
        env.pop(name, None)
    log_path = data / f"serve-{time.time_ns()}.log"
    began = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "r42"), "serve"], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    while "R42 is running" not in log_path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() - began > 900:
            raise RuntimeError(f"r42 serve did not start: see {log_path}")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{pb_port}", time.monotonic() - began


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(60)


def ask(url: str, token: str, question: str) -> tuple[float, float, bool]:
    """(seconds to the first text event, to done, done's grounded) of one offline answer."""
    began = time.monotonic()
    first = 0.0
    grounded = False
    body = {"messages": [{"role": "user", "content": question}]}
    with httpx.stream("POST", f"{url}/api/chat", json=body, headers={"Authorization": f"Bearer {token}"},
                      timeout=120) as resp:
        for line in resp.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "text" and not first:
                first = time.monotonic() - began
            if event["type"] == "done":
                grounded = event.get("grounded", False)
    return first, time.monotonic() - began, grounded


def indexed(pb_url: str, data: Path) -> bool:
    creds = json.loads((data / "superuser.json").read_text())
    admin = httpx.post(f"{pb_url}/api/collections/_superusers/auth-with-password",
                       json={"identity": creds["email"], "password": creds["password"]}).json()["token"]
    rows = httpx.get(f"{pb_url}/api/collections/outbox/records", params={"filter": 'status = "pending"',
                     "perPage": 1}, headers={"Authorization": admin}).json()
    return rows.get("totalItems", 1) == 0


def run() -> str:
    data = Path(tempfile.mkdtemp(prefix="r42-bench-first-"))
    ports = (free_port(), free_port())
    proc, _url, pb_url, _ = start(data, True, ports)  # the first start seeds and indexes the demo KB
    try:
        deadline = time.monotonic() + 900
        while not indexed(pb_url, data) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        stop(proc)
    rows = []
    for n in range(2 * STARTS):  # in turn: the frontend built again (as before issue 49), and its last build reused
        rebuild = n % 2 == 0
        proc, url, pb_url, ready = start(data, False, ports, rebuild)
        try:
            token = httpx.post(f"{pb_url}/api/collections/users/auth-with-password",
                               json={"identity": "learner@example.com", "password": PASSWORD}).json()["token"]
            first = ask(url, token, QUESTIONS[0])
            second = ask(url, token, QUESTIONS[1])
            warm = httpx.get(f"{url}/api/health", timeout=10).json().get("warm", {})
        finally:
            stop(proc)
        rows.append(("built again" if rebuild else "last build reused", ready, first, second,
                     warm.get("seconds", 0.0)))
    out = [f"### First answer after \"R42 is running\" ({2 * STARTS} restarts, demo KB indexed, offline, one worker)",
           "", ("| restart | frontend | start to ready | of which warming | first answer: first text | done "
                "| second answer: done |"), "|---|---|---|---|---|---|---|"]
    for n, (kind, ready, first, second, warm_s) in enumerate(rows, start=1):
        out.append(f"| {n} | {kind} | {ready:.1f} s | {warm_s:.1f} s | {first[0]:.2f} s | {first[1]:.2f} s "
                   f"| {second[1]:.2f} s |")
    medians = {}
    for kind in ("built again", "last build reused"):
        part = [r for r in rows if r[0] == kind]
        medians[kind] = statistics.median(r[1] for r in part)
        first_text = statistics.median(r[2][0] for r in part)
        out.append(f"| median | {kind} | {medians[kind]:.1f} s | {statistics.median(r[4] for r in part):.1f} s | "
                   f"{first_text:.2f} s | {statistics.median(r[2][1] for r in part):.2f} s "
                   f"| {statistics.median(r[3][1] for r in part):.2f} s |")
    ratio = medians["last build reused"] / medians["built again"]
    out += ["", f"Start to ready, last build reused against built again: {ratio:.2f}× (medians)."]
    return "\n".join(out)
