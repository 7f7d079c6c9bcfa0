"""PocketBase under the served app (issue 14): killed, it is restarted and chat works again without restarting the
app; stopped (SIGSTOP), /api/health still answers, 503, while it hangs.

No timings (issue 45): how soon a killed PocketBase is started again is the supervisor's schedule, tested on a clock
the test moves (tests/unit/test_supervisor.py: at the first check a second after it noticed); /api/health gives
PocketBase HEALTH_TIMEOUT_S (r42_app/api.py) on an asyncio deadline. The waits below only keep a broken build from
hanging the run.

They kill and stop the shared app's PocketBase, so they run after the tests that only use the app (the
`disturbs_served_app` marker, tests/conftest.py)."""

import json
import os
import re
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


def healthy(served_app, give_up_after: float = 60) -> bool:
    """Polls /api/health until it says 200; False when it never did (a hang guard, not a measure of speed)."""
    deadline = time.monotonic() + give_up_after
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{served_app.url}/api/health", timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    return False


def test_a_killed_pocketbase_is_restarted_and_chat_works_again(served_app, claude):
    token = httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "learner@example.com", "password": DEMO_PASSWORD}).json()["token"]
    old = pocketbase_of(served_app)
    old.kill()
    assert healthy(served_app), "the app never reached PocketBase again"
    health = httpx.get(f"{served_app.url}/api/health", timeout=5).json()
    assert health["pocketbase"] is True
    assert set(health["event_loop_lag"]) == {"p50_ms", "p99_ms", "max_ms"}
    assert pocketbase_of(served_app).pid != old.pid  # a new PocketBase, under the same app
    claude.reply_text("De AOW is het basispensioen.")
    resp = ask(served_app, token)
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1]["type"] == "done"
    log = served_app.log_tail(200)
    # the supervisor noticed the kill and started it again on its schedule (the first failure in a minute: 1 s)
    assert re.search(r"PocketBase stopped \(exit status -9\); restarting in \d+ s", log), log[-2000:]
    assert "PocketBase is running again" in log


def test_a_hung_pocketbase_still_gets_a_health_answer_while_it_hangs(served_app):
    proc = pocketbase_of(served_app)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        # PocketBase stays hung until the answer is in: a health check that waited for it would never answer
        # (the client gives up after 30 s, fifteen times the app's own deadline for PocketBase)
        resp = httpx.get(f"{served_app.url}/api/health", timeout=30)
        assert resp.status_code == 503 and resp.json()["pocketbase"] is False
        assert proc.status() == psutil.STATUS_STOPPED  # answered while PocketBase was still hung
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    assert healthy(served_app), "the app never reached PocketBase again after it went on"
