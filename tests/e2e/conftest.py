"""Browser tests: `r42 serve` on free ports in a temp data dir, driven by Playwright in Debian's Chromium.

`make test` runs them on two pytest-xdist workers, whole modules each. Every worker serves its own app: the first
from the source tree (as `make run` does), the others from a copy of it (`tree_copy`), because Reflex builds the
frontend in the working directory's `.web` and two apps from one tree break each other."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import expect

from r42_app.services.store.pb import PocketBase
from tests.conftest import DEMO_PASSWORD, free_port

# A loaded 2-core CI machine can take a few seconds to answer a websocket event.
expect.set_options(timeout=15_000)

# Debian's headless shell (the old headless mode, what Playwright itself runs headless) when it is installed, as
# `make test` does: the full browser's new headless mode costs ~1.5x the CPU per page load (docs/TESTING.md). R42_TEST_CHROMIUM picks one.
CHROMIUM = os.environ.get("R42_TEST_CHROMIUM") or next(
    (p for p in ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium") if Path(p).exists()), "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ServedApp:
    url: str
    pb_url: str
    data_dir: Path
    proc: subprocess.Popen
    log: Path
    root: Path = ROOT  # the tree it runs from (its `.web`)
    git_status: str = ""  # `git status --porcelain` before the app started (a run must not change it)
    env: dict | None = None  # the environment it was started with (a restart uses the same)
    _superuser: PocketBase | None = None

    def superuser(self):
        """A superuser PocketBase client for this app (credentials from its data dir), shared: every new
        client is a sign-in, and PocketBase rate-limits those."""
        if self._superuser is None:
            creds = json.loads((self.data_dir / "superuser.json").read_text())
            self._superuser = PocketBase(self.pb_url).as_superuser(creds["email"], creds["password"])
        return self._superuser

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def git_status(root: Path = ROOT) -> str:
    """The working tree's state as git sees it ("" outside a git checkout)."""
    try:
        return subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


# What a copy of the tree must not carry: the checkout's own build output and local state (at its top only:
# `frontend/reflex.lock` and `tests/data` are sources), caches anywhere. `tools` is linked, not copied; a served
# app may be writing the rest while the copy is made.
TOP_ONLY = {".git", ".venv", ".web", ".web-e2e", "data", "tools", ".states", "reflex.lock", "uploaded_files"}
ANYWHERE = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".*.r42-serve.lock")


def _not_copied(directory: str, names: list[str]) -> set[str]:
    skipped = set(shutil.ignore_patterns(*ANYWHERE)(directory, names))
    if Path(directory) == ROOT:
        skipped |= TOP_ONLY & set(names)
    elif Path(directory) == ROOT / "assets":
        skipped.add("external")  # Reflex writes the compiled components' files here on every build
    return skipped


def tree_copy(base: Path, reuse_frontend: bool = False) -> Path:
    """A copy of the source tree in `base`, for a second served app with its own `.web` build. It is a git
    repository of its own (one commit of what was copied), so a test can still ask whether a run changed a tracked
    file. `tools` (PocketBase, bun, axe) is linked.

    Without `reuse_frontend` the copy starts as a fresh clone does: Reflex installs the frontend packages of the
    tracked `frontend/reflex.lock` into the copy's own `.web` (from bun's cache after the first install on this
    machine). With it, and once the tree's frontend is installed, the copy links the tree's installed packages and
    takes the tree's working lockfiles with them, so Reflex finds them up to date and never installs through the
    link into the tree's `.web` (a start stopped halfway, as test_shutdown.py does, would leave it half written)."""
    copy = base / "r42"
    shutil.copytree(ROOT, copy, ignore=_not_copied)
    (copy / "tools").symlink_to(ROOT / "tools")
    lock = ROOT / "reflex.lock"
    # the tree's own build folder, or in a fresh clone the first browser worker's (built while the unit tests ran)
    web = next((w for w in (ROOT / ".web", ROOT / ".web-e2e" / "gw0") if (w / "node_modules").is_dir()
                and (w / "reflex.install_frontend_packages.cached").exists()), None)
    if reuse_frontend and web is not None and lock.is_dir():
        shutil.copytree(web, copy / ".web", ignore=shutil.ignore_patterns("node_modules", "build"))
        (copy / ".web" / "node_modules").symlink_to(web / "node_modules")
        shutil.copytree(lock, copy / "reflex.lock")
    git = ["git", "-c", "user.name=r42 tests", "-c", "user.email=tests@r42.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "a copy for a second served app"]):
        subprocess.run([*git, *args], cwd=copy, check=True, capture_output=True, timeout=120)
    return copy


def serve_command(root: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """`r42 serve` for the tree at `root`: the installed `r42` for the source tree itself, the copy's own package
    (first on PYTHONPATH) for a copy. Returns the command and the environment it needs on top."""
    if root == ROOT:
        return [str(Path(sys.executable).parent / "r42"), "serve", *args], {}
    return [sys.executable, "-m", "r42_app.cli", "serve", *args], {"PYTHONPATH": str(root)}


def prebuilt(name: str = "") -> tuple[int, Path] | None:
    """This worker's frontend (or the one named, as test_workers.py's), built while the unit tests ran (`make test`
    sets R42_E2E_PREBUILT: tests/prebuild.py): (port, build folder), or None to build as usual (no plan, its build
    failed, or its port was taken meanwhile)."""
    if not os.environ.get("R42_E2E_PREBUILT"):
        return None
    from tests.prebuild import wait_for

    built = wait_for(name or os.environ.get("PYTEST_XDIST_WORKER", "gw0"))
    if built is None:
        return None
    import socket

    with socket.socket() as probe:
        # as a server binds (SO_REUSEADDR): a port whose last connections wait out TIME_WAIT is free to listen on
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", built[0]))
        except OSError:
            return None
    return built


@pytest.fixture(scope="session")
def app_root(tmp_path_factory) -> Path:
    """The tree this worker's served app runs from: the source tree on the first (or only) worker, a copy on
    the others."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return ROOT if worker == "gw0" else tree_copy(tmp_path_factory.mktemp(f"tree-{worker}"))


class Attacker:
    """An attacker's web server on loopback: it answers every request and remembers the path. Tests assert that
    nothing a page shows (a topic, an answer, a tool's output) makes the browser call it."""

    def __init__(self):
        self.hits: list[str] = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def _record(self):
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/gif")
                self.end_headers()

            do_GET = do_POST = do_HEAD = _record

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"http://{self.host}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


@pytest.fixture(scope="session")
def attacker():
    server = Attacker()
    yield server
    server.stop()


def write_mcp_config(data_dir: Path, attacker: Attacker) -> Path:
    """The demo MCP servers, plus a hostile read-only one whose answers are XSS payloads (test_xss.py)."""
    from r42_app.services.store.seed import demo_mcp_config

    config = demo_mcp_config(data_dir / "mcp-demo-messages.jsonl")
    config["mcpServers"]["hostile"] = {"command": sys.executable,
                                       "args": [str(ROOT / "tests" / "fakes" / "hostile_mcp_server.py")],
                                       "env": {"R42_TEST_ATTACKER": attacker.url}}
    config["low_risk"].append("hostile__news")
    path = data_dir / "mcp.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture(scope="session")
def served_app(tmp_path_factory, fake_claude, attacker, app_root) -> ServedApp:
    """The real app as `make run` starts it, on its own ports and data dir, with Claude faked. The model timeout is
    10 s (the SDK's: a response, and every chunk of one, within that): it was 3, and on two busy cores the fake,
    a thread of the test process, now and then took longer to answer, so a turn of an unrelated test timed out
    (two of three two-worker runs, issue 45). Under `make test` it serves the frontend built while the unit tests
    ran, and starts on a copy of the data a first start left (seeded and indexed meanwhile: tests/prebuild.py), as a
    second `make run` does; a fresh start's own seeding and indexing is test_shutdown.py's and test_workers.py's."""
    data_dir = tmp_path_factory.mktemp("e2e-data")
    built = prebuilt()
    if built:  # and the data its first start leaves, seeded and indexed meanwhile (tests/prebuild.py make_data)
        from tests.prebuild import copy_data

        copy_data(data_dir)
    write_mcp_config(data_dir, attacker)
    port = built[0] if built else free_port()
    pb_port = free_port(port)
    env = {**os.environ, "R42_DATA_DIR": str(data_dir), "R42_PORT": str(port), "R42_PB_PORT": str(pb_port),
           "R42_DEMO_PASSWORD": DEMO_PASSWORD, "ANTHROPIC_API_KEY": "test-key",
           "ANTHROPIC_BASE_URL": fake_claude.url, "R42_MODEL": "claude-test",
           "R42_MODEL_TIMEOUT": "10", "R42_CHAT_PER_MINUTE": "600", "R42_CHAT_BURST": "50",  # many tests, one learner
           # a file may take 10 s to be read, not 20: test_documents' never-ending PDF holds its slot (and a core)
           # that long; the real files of the tests are read in under a second
           "R42_PARSE_TIMEOUT": "10"}
    env.pop("R42_PB_URL", None)
    if built:
        env["REFLEX_WEB_WORKDIR"] = str(built[1])
    command, extra = serve_command(app_root)
    env.update(extra)
    log = data_dir / "serve.log"
    before = git_status(app_root)
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=app_root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    app = ServedApp(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{pb_port}", data_dir, proc, log, app_root, before,
                    env)
    deadline = time.monotonic() + 900
    while "R42 is running" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            app.stop(10) if proc.poll() is None else None
            pytest.fail(f"r42 serve did not start:\n{app.log_tail()}")
        time.sleep(1)
    settle(app)
    yield app
    if proc.poll() is None:
        app.stop()


def settle(app: ServedApp, timeout: float = 300) -> None:
    """Wait until the app has indexed its seed (the outbox is empty) and connected its MCP servers. On two busy
    cores a fresh app embedding its seed answered a worker's first chat turn after more than 15 s; a test should
    meet the app as a user meets it after start-up, not while it is still busy with its first minute."""
    pb, deadline = app.superuser(), time.monotonic() + timeout
    while pb.list("outbox", filter='status = "pending"', per_page=1, total=True)["totalItems"]:
        if time.monotonic() > deadline:
            pytest.fail(f"the served app did not index its seed within {timeout:.0f} s:\n{app.log_tail()}")
        time.sleep(0.5)
    wait_for_mcp_servers(app)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test-deps` installs Debian's chromium-headless-shell")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 860}, locale="nl-NL")
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context):
    return context.new_page()


# The stored session of each user's first sign-in on an app ((app url, email, password) -> the raw value of
# localStorage's `r42.session`), for `sign_in` to open later tests' pages with, as a second tab of one browser would.
_SESSIONS: dict[tuple[str, str, str], str] = {}


def sign_in(page, app: ServedApp, email: str, path: str = "/", password: str = DEMO_PASSWORD,
            fresh: bool = False) -> None:
    """Open `path` signed in as `email`, and wait for the signed-in page.

    A user's first sign-in on this app goes through the sign-in card (fill, click); a later one opens the page
    with that sign-in's stored session, as another tab of the same browser does, once PocketBase has said its token
    still works (a test may have signed it out: then the card again). A test of signing in or out passes `fresh`:
    always the card, and a token of its own that no other test gets (its sign-out must not end theirs)."""
    key = (app.url, email, password)
    stored = None if fresh else _SESSIONS.get(key)
    restored: set = page.__dict__.setdefault("_r42_restored", set())
    if stored and key not in restored and _still_valid(app, stored):
        restored.add(key)
        flag = json.dumps(f"r42-test-restored:{email}")
        # Once per tab: a reload after the test signs out must not sign it in again.
        page.add_init_script(f"if (!sessionStorage.getItem({flag})) {{ sessionStorage.setItem({flag}, '1'); "
                             f"localStorage.setItem('r42.session', {json.dumps(stored)}); }}")
        page.goto(app.url + path)
        page.wait_for_selector("#user-menu")
        return
    page.goto(app.url + path)
    page.fill("#email", email)
    page.fill("#password", password)
    page.click("#sign-in")
    page.wait_for_selector("#user-menu")
    if not fresh:
        _SESSIONS[key] = page.evaluate("localStorage.getItem('r42.session')") or ""


def own_record(app: ServedApp, token: str, user_id: str) -> int:
    """The status PocketBase's REST API answers this token asking for its user's own record."""
    import httpx

    return httpx.get(f"{app.pb_url}/api/collections/users/records/{user_id}", headers={"Authorization": token},
                     timeout=10).status_code


def _still_valid(app: ServedApp, stored: str) -> bool:
    """Whether PocketBase still takes this stored session's token (not signed out, not expired): its user may read
    their own record with it."""
    import base64

    import httpx

    token = json.loads(stored) if stored.startswith('"') else stored
    try:
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        return own_record(app, token, claims["id"]) == 200
    except (ValueError, IndexError, KeyError, httpx.HTTPError):
        return False


def wait_for_mcp_servers(app: ServedApp) -> None:
    """The app connects its MCP servers at boot, next to serving pages: wait until health says they are."""
    import httpx

    mcp: dict = {}
    for _ in range(120):
        mcp = httpx.get(f"{app.url}/api/health", timeout=10).json().get("mcp", {})
        if mcp and all(state == "connected" for state in mcp.values()):
            return
        time.sleep(0.25)
    pytest.fail(f"the MCP servers did not connect: {mcp}")


def end_active_quizzes(app: ServedApp) -> None:
    """End every open quiz session, so a test never leaves a learner locked out of chat for the tests after it."""
    pb = app.superuser()
    for row in pb.all("quiz_sessions", filter="active = true"):
        pb.update("quiz_sessions", row["id"], {"active": False})
