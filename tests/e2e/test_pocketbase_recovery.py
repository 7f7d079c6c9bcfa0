"""PocketBase under the served app (issue 14): killed, it is restarted and chat works again within 10 s
without restarting the app; stopped (SIGSTOP), /api/health still answers 503 within 3 s.

They kill and stop the shared app's PocketBase, so they run after the tests that only use the app (the
`disturbs_served_app` marker, tests/conftest.py)."""

import json
import os
import signal
import time

import httpx
import psutil
import pytest

from tests.conftest import DEMO_PASSWORD

pytestmark = pytest.mark.disturbs_served_app


def pocketbase_of(served_app) -> psutil.Process:
    [proc] = [p for p in psutil.process_iter(["name", "cmdline"])
              if p.info["name"] == "pocketbase" and any(str(served_app.data_dir) in a for a in p.info["cmdline"] or [])]
    return proc


def ask(served_app, token):
    return httpx.post(f"{served_app.url}/api/chat", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                      json={"messages": [{"role": "user", "content": "Wat is de AOW?"}], "mode": "fts"})


def test_a_killed_pocketbase_is_restarted_and_chat_works_again(served_app, claude):
    token = httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "learner@example.com", "password": DEMO_PASSWORD}).json()["token"]
    old = pocketbase_of(served_app)
    old.kill()
    started = time.monotonic()
    while time.monotonic() - started < 10:
        try:
            if httpx.get(f"{served_app.url}/api/health", timeout=3).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    health = httpx.get(f"{served_app.url}/api/health", timeout=3).json()
    assert health["pocketbase"] is True
    assert set(health["event_loop_lag"]) == {"p50_ms", "p99_ms", "max_ms"}
    assert time.monotonic() - started < 10
    assert pocketbase_of(served_app).pid != old.pid
    claude.reply_text("De AOW is het basispensioen.")
    resp = ask(served_app, token)
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1]["type"] == "done"
    assert "PocketBase stopped" in served_app.log_tail(200) and "PocketBase is running again" in served_app.log_tail(200)


def test_a_hung_pocketbase_still_gets_a_quick_health_answer(served_app):
    proc = pocketbase_of(served_app)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        resp = httpx.get(f"{served_app.url}/api/health", timeout=10)
        took = time.monotonic() - started
        assert resp.status_code == 503 and resp.json()["pocketbase"] is False
        assert took < 3, f"/api/health took {took:.1f} s"
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    for _ in range(40):
        if httpx.get(f"{served_app.url}/api/health", timeout=5).status_code == 200:
            break
        time.sleep(0.25)
    assert httpx.get(f"{served_app.url}/api/health", timeout=5).status_code == 200
