"""Issue 17: `r42 serve --workers 2` with the embedded Redis and a Chroma server: two browsers on different
workers both see an approval on the graph page. (A tab whose backend is killed mid-answer and reconnects to
another with its session: test_cluster.py, where the other backend is on another machine, the harder case.)
Issue 21: wrong passwords from many tabs count once across the workers.
Issue 23: a high-risk tool's confirmation posted to the other worker resolves the turn waiting in the first.

The app runs from a copy of the source tree (its own `.web` build), so its compiled URLs never touch
the session's `served_app`."""

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from r42_app.core.messages import msg
from r42_app.services.runtime.liveness import worker_tag
from r42_app.services.runtime.shared_state import BEAT_PREFIX
from r42_app.services.runtime.sidecars import redis_binary
from tests.conftest import DEMO_PASSWORD, free_port
from tests.e2e.conftest import prebuilt, sign_in, tree_copy
from tests.e2e.test_chat import ask, open_chat
from tests.e2e.test_graph_chips import proposal


class WorkersApp:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path, pb_url: str = ""):
        self.url, self.proc, self.log, self.pb_url = url, proc, log, pb_url

    def processes(self) -> dict[str, psutil.Process]:
        """The backend workers (Granian's children of the Reflex process), by their worker tag."""
        serve = psutil.Process(self.proc.pid)
        reflex = next(p for p in serve.children() if "r42_app.reflex_main" in " ".join(p.cmdline()))
        return {worker_tag(p.pid): p for p in reflex.children() if "python" in p.name()}

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def workers_app(tmp_path_factory, fake_claude):
    base = tmp_path_factory.mktemp("workers")
    built = prebuilt("workers")  # its frontend, built while the unit tests ran (`make test`), else it builds now
    copy = tree_copy(base, reuse_frontend=built is None)
    data, port = base / "data", built[0] if built else free_port()
    pb_port = free_port(port)
    env = {**os.environ, "PYTHONPATH": str(copy), "R42_DATA_DIR": str(data), "R42_PORT": str(port),
           "R42_PB_PORT": str(pb_port), "R42_DEMO_PASSWORD": DEMO_PASSWORD, "ANTHROPIC_API_KEY": "test-key",
           "ANTHROPIC_BASE_URL": fake_claude.url, "R42_MODEL": "claude-test", "R42_MODEL_TIMEOUT": "30",
           "R42_CHAT_PER_MINUTE": "600", "R42_CHAT_BURST": "50"}
    for name in ("R42_PB_URL", "REFLEX_REDIS_URL", "R42_REDIS_URL", "CHROMA_URL", "R42_BACKEND_WORKERS"):
        env.pop(name, None)
    if built:
        env["REFLEX_WEB_WORKDIR"] = str(built[1])
    data.mkdir()
    log = data / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "r42_app.cli", "serve", "--workers", "2"], cwd=copy, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    app = WorkersApp(f"http://127.0.0.1:{port}", proc, log, f"http://127.0.0.1:{pb_port}")
    deadline = time.monotonic() + 900
    while "R42 is running" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"r42 serve --workers 2 did not start:\n{app.log_tail()}")
        time.sleep(1)
    yield app
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)  # Ctrl-C: everything it started stops, Redis and Chroma included
    proc.wait(60)
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"still running after Ctrl-C: {[p.cmdline()[:3] for p in alive]}"


def test_serve_with_two_workers_starts_redis_and_chroma_and_two_backends(workers_app):
    text = workers_app.log_tail()
    assert "2 backend workers share their state through the embedded Redis" in text
    assert "a Chroma server on 127.0.0.1:" in text
    assert len(workers_app.processes()) == 2


def redis_cli(*args: str) -> str:
    done = subprocess.run([str(redis_binary().parent / "redis-cli"), *args], capture_output=True, text=True, timeout=30)
    return (done.stdout + done.stderr).strip()


def test_the_chroma_server_wants_its_token_and_the_app_indexes_through_it(workers_app):
    port = re.search(r"a Chroma server on 127\.0\.0\.1:(\d+)", workers_app.log_tail())[1]
    collections = f"http://127.0.0.1:{port}/api/v2/tenants/default_tenant/databases/default_database/collections"
    refused = httpx.get(collections)
    assert refused.status_code in (401, 403) and "r42-kb-" not in refused.text
    token = (workers_app.log.parent / "chroma.token").read_text().strip()
    bearer = {"Authorization": f"Bearer {token}"}

    def indexed() -> int:
        """Passage vectors in the tenants' collections (one per tenant and model)."""
        listed = httpx.get(collections, headers=bearer)
        assert listed.status_code == 200
        ids = [c["id"] for c in listed.json() if c["name"].startswith("r42-kb-")]
        return sum(httpx.get(f"{collections}/{i}/count", headers=bearer).json() for i in ids)

    deadline = time.monotonic() + 300  # the workers index the demo knowledge base through the server
    while indexed() < 50 and time.monotonic() < deadline:
        time.sleep(2)
    assert indexed() >= 50
    assert "r42-kb-" not in httpx.get(collections).text  # still nothing without the token
    assert token not in workers_app.log.read_text()


def test_nothing_in_the_data_dir_is_open_to_other_users(workers_app):
    data = workers_app.log.parent
    assert (data / "pb_data" / "data.db").is_file() and (data / "chroma" / "chroma.sqlite3").is_file()
    assert (data / "redis").is_dir() and (data / "redis.password").is_file()
    open_ = [f"{p.relative_to(data)} {stat.filemode(p.lstat().st_mode)}" for p in [data, *data.rglob("*")]
             if not p.is_symlink() and p.lstat().st_mode & 0o077]
    assert open_ == []


def test_a_killed_worker_is_replaced_and_the_app_keeps_answering(workers_app):
    """Granian is told to respawn a worker that dies (r42_app/reflex_main.py) instead of shutting the server down.
    (What the tabs of a dead backend see: test_cluster.py.)"""
    before = workers_app.processes()
    victim = sorted(before)[0]
    before[victim].kill()
    deadline = time.monotonic() + 120
    while set(after := workers_app.processes()) == set(before) or len(after) < 2:
        assert workers_app.proc.poll() is None and time.monotonic() < deadline, workers_app.log_tail()
        time.sleep(0.5)
    assert victim not in after and len(after) == 2
    assert httpx.get(f"{workers_app.url}/api/health", timeout=30).status_code == 200


def test_two_browsers_on_different_workers_both_see_an_approval_on_the_graph(workers_app, browser, claude):
    learner_ctx, admin_ctx = browser.new_context(), browser.new_context()
    learner, admin = learner_ctx.new_page(), admin_ctx.new_page()
    sign_in(admin, workers_app, "admin@example.com", path="/graph")
    sign_in(learner, workers_app, "learner@example.com", path="/graph")
    for page in (admin, learner):
        page.wait_for_function("() => window.__r42graph && window.__r42graph.ids().length > 0")

    def tag(page):
        return page.locator("#r42-chat").get_attribute("data-r42-worker")

    for _ in range(12):  # the kernel spreads connections over the workers; reload until they differ
        if tag(learner) != tag(admin):
            break
        learner.reload()
        learner.wait_for_function("() => window.__r42graph && window.__r42graph.ids().length > 0")
    assert tag(learner) != tag(admin), "both browsers stayed on one worker"
    assert {tag(learner), tag(admin)} <= set(workers_app.processes())
    learner.evaluate("window.__notReloaded = true")
    admin.evaluate("window.__notReloaded = true")

    chatter = learner_ctx.new_page()
    claude.reply_tool("propose_graph_delta", proposal("werker-race"))
    claude.reply_text("Voorstel gedaan.")
    chatter.goto(workers_app.url + "/")
    open_chat(chatter)
    ask(chatter, "Kan dit erbij?")
    # The chat may land on the worker the test above killed and its supervisor started again, which may still be
    # warming up (the embedding model, the indexes) on a busy machine. One fresh-clone run failed here once, with
    # the 30 s a click waits and no log; the cause is not known. Its own bound now, and the app's log with a failure.
    proposed = chatter.locator(".r42-delta").last.locator(".r42-delta-yes")
    try:
        proposed.wait_for(timeout=90_000)
    except PlaywrightTimeout:
        pytest.fail("the proposal never showed; the app's log:\n" + workers_app.log_tail())
    proposed.click()
    expect(chatter.locator(".r42-delta").last).to_contain_text("Voorgelegd aan de beheerders")
    admin.wait_for_function("() => window.__r42graph.pending().includes('werker-race')")

    queue = admin_ctx.new_page()
    queue.goto(workers_app.url + "/admin/suggestions")
    card = queue.locator(".suggestion", has_text="Werker Race")
    card.locator(".approve-suggestion").click()
    expect(queue.locator(".suggestion", has_text="Werker Race")).to_have_count(0)
    for page in (learner, admin):  # both open graphs show the new topic, without a reload
        page.wait_for_function("() => window.__r42graph.ids().includes('werker-race')", timeout=30_000)
        assert page.evaluate("window.__notReloaded") is True
    learner_ctx.close()
    admin_ctx.close()


def test_the_embedded_redis_wants_its_password_and_every_redis_user_has_it(workers_app, browser, claude):
    """Issue 21: redis-cli without the password gets NOAUTH. Reflex's state (the tests above), both workers'
    heartbeats and the shared chat limiter are in Redis: each of them connected with the password."""
    port = re.search(r"embedded Redis on 127\.0\.0\.1:(\d+)", workers_app.log_tail())[1]
    assert "NOAUTH" in redis_cli("-p", port, "ping")
    assert "NOAUTH" in redis_cli("-p", port, "keys", "*")
    password = (workers_app.log.parent / "redis.password").read_text().strip()
    url = f"redis://default:{password}@127.0.0.1:{port}/0"
    assert redis_cli("-u", url, "--no-auth-warning", "ping") == "PONG"

    def keys(pattern: str) -> list[str]:
        return redis_cli("-u", url, "--no-auth-warning", "--scan", "--pattern", pattern).split()

    # both live workers beat (a worker killed by a test above beats again once its supervisor has started it
    # anew, which takes a while on a busy machine)
    deadline = time.monotonic() + 90
    while len(beats := keys(BEAT_PREFIX + "*")) < 2 and time.monotonic() < deadline:
        time.sleep(1)
    assert len(beats) >= 2, (beats, workers_app.log_tail())
    ctx = browser.new_context()
    page = ctx.new_page()
    claude.reply_text("Een antwoord.")
    sign_in(page, workers_app, "learner@example.com")
    open_chat(page)
    ask(page, "Een vraag voor de teller?")
    expect(page.locator(".r42-assistant").last).to_contain_text("Een antwoord.", timeout=30_000)
    assert keys("r42:rl:chat:*"), "the chat limiter kept no bucket in Redis"  # it counts per user in Redis
    ctx.close()
    assert password not in workers_app.log.read_text()


def serving_worker(app: WorkersApp, response: httpx.Response) -> str:
    """The tag of the backend worker at the other end of `response`'s connection (still open: keep-alive),
    found by asking the kernel which worker process holds that TCP connection."""
    client_port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    app_port = int(app.url.rsplit(":", 1)[1])
    for tag, proc in app.processes().items():
        for conn in proc.net_connections("tcp"):
            if conn.laddr.port == app_port and conn.raddr and conn.raddr.port == client_port:
                return tag
    raise AssertionError(f"no backend worker holds the connection from port {client_port}")


def test_a_confirmation_posted_to_the_other_worker_resolves_the_turn_waiting_in_the_first(workers_app, claude):
    """Issue 23: the turn waits for the user's yes in the worker that runs it; the yes (POST /api/chat/confirm)
    reaches the other worker, and the turn goes on. Each request's worker is read from the kernel (which worker
    holds its connection), and the confirming connection is made again until it is on the other worker."""
    messages = workers_app.log.parent / "mcp-demo-messages.jsonl"
    token = httpx.post(f"{workers_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "admin@example.com", "password": DEMO_PASSWORD}).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    turn_client = httpx.Client(base_url=workers_app.url, headers=headers, timeout=60)
    for _ in range(240):  # the workers connect their MCP servers at boot (and again after the respawn above)
        health = turn_client.get("/api/health")
        mcp = health.json().get("mcp", {})
        if mcp and all(state == "connected" for state in mcp.values()):
            break
        time.sleep(0.25)
    assert mcp.get("r42demo") == "connected", mcp
    claude.reply_tool("r42demo__send_message", {"subject": "Via de andere werker", "text": "Hallo."})
    claude.reply_text("Verstuurd.")
    seen, turn_worker, confirm_worker = [], "", ""
    with turn_client.stream("POST", "/api/chat", json={"messages": [{"role": "user", "content": "Stuur een bericht"}],
                                                        "mode": "fts"}) as stream:
        assert stream.status_code == 200
        turn_worker = serving_worker(workers_app, stream)
        for line in stream.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            seen.append(event["type"])
            if event["type"] != "confirm_required":
                continue
            for _ in range(40):  # a new connection each time, until the kernel gives it to the other worker
                with httpx.Client(base_url=workers_app.url, headers=headers, timeout=30) as confirm_client:
                    probe = confirm_client.get("/api/health")
                    if serving_worker(workers_app, probe) == turn_worker:
                        continue
                    answer = confirm_client.post("/api/chat/confirm", json={"id": event["id"], "decision": "allow"})
                    confirm_worker = serving_worker(workers_app, answer)
                    break
            assert confirm_worker and confirm_worker != turn_worker, "every connection went to the turn's worker"
            assert answer.status_code == 200, answer.text
    turn_client.close()
    assert seen[-1] == "done" and "confirm_required" in seen, seen
    assert {turn_worker, confirm_worker} == set(workers_app.processes())
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    assert json.loads(result["content"])["status"] == "sent"
    assert "Via de andere werker" in messages.read_text()


def test_wrong_passwords_from_many_tabs_count_once_across_the_workers(workers_app, browser):
    """Issue 21, hole 4: 22 wrong sign-ins, every other one from a tab on the other worker. The 11th and every one
    after it are refused (each worker counting alone let 20 through). Two tabs, one per worker, take turns: each
    refusal empties the password field, so a tab's next try starts after its last answer. Last in this module: it
    leaves this address throttled for a minute."""
    ctx = browser.new_context()
    workers = sorted(workers_app.processes())
    assert len(workers) == 2
    tabs = []
    for worker in workers:  # one tab on each worker
        page = ctx.new_page()
        page.goto(workers_app.url + "/")
        for _ in range(12):  # the kernel spreads connections over the workers; reload until it is this one
            page.wait_for_function("tags => tags.includes(document.querySelector('#sign-in-card')"
                                   "?.getAttribute('data-r42-worker'))", arg=workers)
            if page.locator("#sign-in-card").get_attribute("data-r42-worker") == worker:
                break
            page.reload()
        assert page.locator("#sign-in-card").get_attribute("data-r42-worker") == worker
        tabs.append(page)
    answers = ["E-mailadres of wachtwoord klopt niet."] * 10 + [msg("auth.too_many_attempts")] * 12
    for i, answer in enumerate(answers):
        page = tabs[i % 2]
        page.bring_to_front()  # as a user switching tabs (a click in a tab behind another waits ~2 s in Chromium)
        page.fill("#email", f"tab-{i}@example.com")
        page.fill("#password", "raden")
        page.click("#sign-in")
        expect(page.locator("#password")).to_have_value("")  # answered (the message may be drawn a moment after)
        expect(page.locator("#signin-error")).to_have_text(answer)
    assert {tab.locator("#sign-in-card").get_attribute("data-r42-worker") for tab in tabs} == set(workers)
    ctx.close()
