"""What `r42 serve` runs: PocketBase, the sidecars (Redis, Chroma) when they are wanted, and the web app,
kept running until Ctrl-C or SIGTERM, then stopped in order.

Every child is spawned from the main thread with `die_with_parent`, so a `r42 serve` killed outright (SIGKILL)
takes them along: the kernel sends each SIGTERM. The web app's process (Reflex) leads its own process group and
takes that group down on the signal (r42_app/reflex_main.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from r42_app.core.redact import redacted_url
from r42_app.paths import ROOT
from r42_app.services.runtime.children import die_with_parent
from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser, reachable_host
from r42_app.services.runtime.private import PRIVATE_UMASK, private_data_dir
from r42_app.services.runtime.replication import DB_NAME, Replicator, redacted
from r42_app.services.runtime.sidecars import ChromaServer, RedisServer
from r42_app.services.runtime.warm_marks import warm_markers
from r42_app.services.runtime.web_lock import WebDirLock
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError
from r42_app.services.store.seed import DEMO_USERS
from r42_app.settings import Settings


def say(message: str) -> None:
    """A line of what `r42 serve` is doing, on standard output."""
    print(f"r42: {message}", flush=True)


def _err(message: str) -> None:
    print(f"r42: {message}", file=sys.stderr)


def _restore_frontend_lock() -> None:
    """Give Reflex the pinned frontend versions on a fresh checkout.

    Reflex rewrites ``reflex.lock/`` on every build (its format even changes between runs), so the tracked
    copy lives in ``frontend/reflex.lock/`` and the working copy is ignored by git: a run never dirties the tree.
    """
    pinned, working = ROOT / "frontend" / "reflex.lock", ROOT / "reflex.lock"
    if not pinned.is_dir():
        return
    working.mkdir(exist_ok=True)
    for src in pinned.iterdir():
        dest = working / src.name
        if src.is_file() and not dest.exists():
            dest.write_bytes(src.read_bytes())


def _reflex_env(cfg: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("REFLEX_TELEMETRY_ENABLED", "false")
    env.setdefault("REFLEX_CHECK_LATEST_VERSION", "false")
    # one embedding thread per backend worker unless told otherwise: a chat's query is a small batch, which a
    # second thread makes dearer (2.6 -> 5.0 ms of CPU for a batch of 8), and the other core serves the rest
    env.setdefault("R42_EMBED_THREADS", "1")
    bun = ROOT / "tools" / "bin" / "bun"
    if bun.exists():
        env.setdefault("REFLEX_BUN_PATH", str(bun))
    env["R42_DATA_DIR"] = str(cfg.data_dir)
    env["R42_PORT"] = str(cfg.port)
    env["R42_PB_PORT"] = str(cfg.pb_port)
    return env


def _wait_http(url: str, proc: subprocess.Popen | None, timeout: float, stopping: Callable[[], bool]) -> bool:
    """Until `url` answers 200 (False when `proc`, if given, exits first, or on a stop or the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stopping():
        if proc is not None and proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=2, follow_redirects=True).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def _wait_warm(url: str, proc: subprocess.Popen, timeout: float, stopping: Callable[[], bool],
               markers: Path | None = None, workers: int = 1) -> bool:
    """Until /api/health no longer says "warming" and, with `markers`, `workers` workers have left their mark
    there: the embedding model and the indexes are loaded in every worker (services/runtime/warmup.py; health
    answers for whichever worker it reaches). A degraded PocketBase is not ours to wait for here."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stopping():
        if proc.poll() is not None:
            return False
        try:
            warm = httpx.get(url, timeout=5).json().get("status") != "warming"
        except (httpx.HTTPError, ValueError):
            warm = False
        if warm and (markers is None or _count(markers) >= workers):
            return True
        time.sleep(0.5)
    return False


def _count(folder: Path) -> int:
    try:
        return sum(1 for _ in folder.iterdir())
    except OSError:
        return 0


def _stop_group(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Stop a child and everything it started (it leads its own process group)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    # The leader may be gone while children (bun, workers) linger: sweep the group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def _banner(cfg: Settings, with_demo: bool = True) -> str:
    lines = [
        "",
        "  R42 is running",
        f"  Open        {cfg.frontend_url}/",
    ]
    if cfg.frontend_url != cfg.app_url:
        lines.append(f"  This one    {cfg.app_url}/  (a web machine behind that address)")
    if with_demo:
        lines.append("  Sign in as")
        for user in DEMO_USERS:
            lines.append(f"              {user.email:<24} {user.role:<8} tenant {user.tenant}")
        lines.append(f"  Password    {cfg.demo_password}  (R42_DEMO_PASSWORD)")
    lines += ["  Stop        Ctrl-C", ""]
    return "\n".join(lines)


class _Shutdown:
    """One Ctrl-C or SIGTERM asks for a clean stop (the main loop notices); a second one during the
    stop ends everything at once, quietly."""

    def __init__(self) -> None:
        self.requested = False
        self.children: list[subprocess.Popen] = []

    def __call__(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        if not self.requested:
            self.requested = True
            return
        for child in self.children:  # the second signal: no more waiting
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
        os._exit(130)


class Supervisor:
    """Keeps a child server (PocketBase, Redis, Chroma) running: restarted when it exits (backoff 1 s to 30 s,
    a line each time), given up after RESTARTS_PER_MINUTE failures within a minute, with a message saying
    where to look."""

    RESTARTS_PER_MINUTE = 5

    def __init__(self, server, log: Callable[[str], None], name: str = "PocketBase"):
        self.server = server
        self.log = log
        self.name = name
        self.failures: list[float] = []
        self.next_try = 0.0
        self.delay = 1.0

    def _failed(self, now: float) -> bool:
        """Count a failure; True when there were too many within a minute."""
        self.failures = [t for t in self.failures if now - t < 60] + [now]
        self.next_try = now + self.delay
        self.delay = min(30.0, self.delay * 2)
        return len(self.failures) >= self.RESTARTS_PER_MINUTE

    def check(self) -> bool:
        """Call now and then: False once it gave up."""
        proc = self.server.proc
        now = time.monotonic()
        if proc is not None and proc.poll() is None:
            if self.failures and now - self.failures[-1] > 60:
                self.failures, self.delay = [], 1.0  # it has run a minute: forget the earlier trouble
            return True
        if proc is not None:  # it just exited
            self.server.proc = None
            self.log(f"{self.name} stopped (exit status {proc.returncode}); restarting in {self.delay:.0f} s "
                     f"(see {self.server.log_file})")
            if self._failed(now):
                self.log(f"{self.name} stopped {len(self.failures)} times within a minute; giving up. "
                         f"See {self.server.log_file}, then start R42 again.")
                return False
        if now < self.next_try:
            return True
        try:
            self.server.start()
            self.log(f"{self.name} is running again")
        except RuntimeError as exc:
            self.log(f"{self.name} did not start: {exc}; trying again in {self.delay:.0f} s")
            if self._failed(now):
                self.log(f"giving up on {self.name}; start R42 again once the problem above is fixed")
                return False
        return True


ROLES = ("all", "web", "data")


def _data_banner(cfg: Settings, pb_url: str, redis: RedisServer, chroma_url: str) -> str:
    """What a web machine (`r42 serve --web-only`) and an outbox worker need to use this data machine."""
    return "\n".join([
        "",
        "  R42's data machine is running: PocketBase, Redis and the Chroma server",
        f"  R42_PB_URL        {pb_url}",
        f"  REFLEX_REDIS_URL  redis://default:<{redis.password_file}>@{reachable_host(cfg.bind)}:{redis.port}/0",
        f"  CHROMA_URL        {chroma_url}",
        f"  R42_CHROMA_TOKEN  <{cfg.data_dir / 'chroma.token'}>",
        f"  and a copy of     {cfg.superuser_file}",
        "  Web machines:     r42 serve --web-only   (docs/DEPLOY.md)",
        "  Stop              Ctrl-C",
        "",
    ])


def _web_only_problem(cfg: Settings) -> str:
    """Why this machine cannot serve the web app beside others, or "" when it can."""
    if not cfg.pb_url_override:
        return "--web-only uses the PocketBase of the data machine: set R42_PB_URL (docs/DEPLOY.md)"
    if not cfg.redis_url:
        return ("--web-only serves beside other web machines, which share their sessions through Redis: set "
                "REFLEX_REDIS_URL (the data machine's, with its password)")
    if not cfg.chroma_url:
        return "--web-only searches the shared index: set CHROMA_URL and R42_CHROMA_TOKEN (the data machine's)"
    return ""


def build(cfg: Settings, *, loglevel: str = "warning") -> bool:
    """`r42 build`: the web app's frontend for these settings (R42_PORT, R42_PUBLIC_URL, REFLEX_WEB_WORKDIR), built
    as `serve` would build it and recorded, and nothing served. The next `serve` with the same settings (or a web
    machine given this build folder) serves it at once; an unchanged app is not built again. True when it is built."""
    try:
        web_lock = WebDirLock(cfg.port).acquire()  # not while a server uses this build folder
    except RuntimeError as exc:
        _err(str(exc))
        return False
    try:
        _restore_frontend_lock()
        say(f"building the web app for {cfg.frontend_url} (the first build takes a minute)")
        done = subprocess.run(
            [sys.executable, "-m", "r42_app.reflex_main", "build", "--env", "prod", "--frontend-port", str(cfg.port),
             "--backend-port", str(cfg.port), "--backend-host", cfg.bind, "--loglevel", loglevel],
            cwd=ROOT, env=_reflex_env(cfg), stdin=subprocess.DEVNULL, preexec_fn=die_with_parent(), check=False)
        if done.returncode:
            _err(f"the web app's build failed (exit status {done.returncode})")
        return done.returncode == 0
    finally:
        web_lock.release()


def serve(cfg: Settings, *, workers: int, chroma_server: bool, loglevel: str, start_timeout: float,
          prepare: Callable[[str, Callable[[str], None]], None] | None = None,
          stopped_early: Callable[[], bool] = lambda: False, role: str = "all") -> bool:
    """Run R42 until Ctrl-C or SIGTERM: True after a clean stop, False when something failed (it says what).

    `role` (issue 50): "all" is one machine (PocketBase on loopback, the sidecars it needs, the web app on R42_BIND);
    "data" is the data machine of several (PocketBase, Litestream, Redis and the Chroma server on R42_BIND, no web
    app); "web" is one of several web machines (the web app only, against R42_PB_URL, REFLEX_REDIS_URL and
    CHROMA_URL).
    `prepare(pb_url, say)` runs once PocketBase answers, before the web app starts (the demo seed; not on a web
    machine). Call it from the main thread: the signal handlers and the children's parent-death signal need it.
    `stopped_early()` says whether a stop signal came before this function's own handlers were in place."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    os.umask(PRIVATE_UMASK)  # for everything serve and its children write: PocketBase, Redis, Chroma, the app
    private_data_dir(cfg.data_dir)
    if role == "web" and (problem := _web_only_problem(cfg)):
        _err(problem)
        return False
    if role == "data" and cfg.pb_url_override:
        _err("--data-only runs the PocketBase; R42_PB_URL is for the web machines and workers: unset it here")
        return False
    own_pb = role != "web" and not cfg.pb_url_override  # one machine against a PocketBase elsewhere: R42_PB_URL
    shutdown = _Shutdown()
    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    if stopped_early():
        return True
    pb_server: PocketBaseServer | None = None
    sidecars: list[tuple[str, RedisServer | ChromaServer | Replicator]] = []  # (name, server) started here
    reflex: subprocess.Popen | None = None
    web_lock: WebDirLock | None = None
    env = _reflex_env(cfg)
    data_host = cfg.bind if role == "data" else "127.0.0.1"  # one machine keeps Redis and Chroma on loopback
    pb_host = cfg.bind if role == "data" or cfg.bind not in ("0.0.0.0", "::") else "127.0.0.1"  # where cfg.pb_url is
    try:
        if not own_pb:
            say(f"using the PocketBase at {redacted_url(cfg.pb_url)}")
            if not _wait_http(f"{cfg.pb_url}/api/health", None, start_timeout, lambda: shutdown.requested):
                if shutdown.requested:
                    return True
                _err(f"the PocketBase at {redacted_url(cfg.pb_url)} does not answer; is the data machine up?")
                return False
            # asked once PocketBase answers: a data machine sharing this data dir (the Procfile) has made it by then
            if not cfg.superuser_file.exists():
                _err(f"copy superuser.json from the PocketBase's machine into {cfg.data_dir} (mode 0600): "
                     "the app signs in to PocketBase with it")
                return False
        else:
            say(f"starting PocketBase on {pb_host}:{cfg.pb_port} (data in {cfg.data_dir})")
            ensure_superuser(cfg.pb_data_dir, cfg.superuser_file)
            pb_server = PocketBaseServer(cfg.pb_data_dir, cfg.pb_port, origins=cfg.allowed_origins,
                                         host=pb_host).start()
            if pb_server.proc is not None:
                shutdown.children.append(pb_server.proc)
            if prepare is not None:
                prepare(pb_server.url, say)
            if cfg.replica_url:  # PocketBase's database replicated as it is written (issue 50): its file exists now
                replicator = Replicator(cfg.pb_data_dir / DB_NAME, cfg.replica_url, cfg.data_dir / "litestream.log")
                sidecars.append(("Litestream", replicator))
                replicator.start(on_spawn=shutdown.children.append)
                say(f"PocketBase's database is replicated to {redacted(replicator.url)} (Litestream, every second)")
        env["GRANIAN_WORKERS"] = str(workers)
        redis: RedisServer | None = None
        if cfg.redis_url:  # given: used however many workers there are
            env["REFLEX_REDIS_URL"] = cfg.redis_url
            say(f"{workers} backend worker(s) keep their state in {redacted_url(cfg.redis_url)}")
        elif workers > 1 or role == "data":
            redis = RedisServer(cfg.data_dir / "redis", cfg.redis_port if role == "data" else None, host=data_host)
            sidecars.append(("Redis", redis))  # stopped in `finally`, even if it is still starting
            redis.start(on_spawn=shutdown.children.append)
            env["REFLEX_REDIS_URL"] = redis.url  # with its password (redis.password in the data dir)
            who = "the web machines share" if role == "data" else f"{workers} backend workers share"
            say(f"{who} their state through the embedded Redis on {data_host}:{redis.port} (data in "
                f"{cfg.data_dir / 'redis'}, password required; set REFLEX_REDIS_URL to use your own)")
        chroma_url = cfg.chroma_url
        if cfg.chroma_url:
            say(f"search index: the Chroma server at {redacted_url(cfg.chroma_url)}")
        elif chroma_server or workers > 1 or role == "data":
            chroma = ChromaServer(cfg.chroma_dir, cfg.chroma_port if role == "data" else None, host=data_host)
            sidecars.append(("Chroma", chroma))
            chroma.start(on_spawn=shutdown.children.append)
            chroma_url = env["CHROMA_URL"] = chroma.url
            env["R42_CHROMA_TOKEN"] = chroma.token  # (chroma.token in the data dir)
            why = "" if chroma_server or role == "data" else " (several workers cannot share the embedded index)"
            say(f"search index: a Chroma server on {data_host}:{chroma.port} over {cfg.chroma_dir}, token "
                f"required{why}")
        if shutdown.requested:
            return True
        if role == "data":
            assert pb_server is not None
            if redis is not None:
                print(_data_banner(cfg, pb_server.url, redis, chroma_url), flush=True)
            else:
                print(f"\n  R42's data machine is running: PocketBase at {pb_server.url}\n  Stop  Ctrl-C\n", flush=True)
        else:
            web_lock = WebDirLock(cfg.port).acquire()  # a second server on this build folder refuses here
            public = f", pages talking to {cfg.frontend_url}" if cfg.frontend_url != cfg.app_url else ""
            say(f"building and starting the web app on {cfg.bind}:{cfg.port}{public} (first build takes a minute)")
            _restore_frontend_lock()
            markers = warm_markers(cfg.data_dir)
            shutil.rmtree(markers, ignore_errors=True)  # each worker of this start leaves its own when it is warm
            reflex = subprocess.Popen(
                [sys.executable, "-m", "r42_app.reflex_main", "run", "--env", "prod", "--frontend-port",
                 str(cfg.port), "--backend-port", str(cfg.port), "--backend-host", cfg.bind, "--loglevel", loglevel],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent(),
            )
            shutdown.children.append(reflex)
            if not _wait_http(f"{cfg.app_url}/", reflex, start_timeout, lambda: shutdown.requested):
                if shutdown.requested:
                    return True
                _err(f"the web app did not come up on {cfg.app_url} (exit status {reflex.poll()})")
                return False
            say("loading the embedding model and the search indexes")
            if not _wait_warm(f"{cfg.app_url}/api/health", reflex, start_timeout, lambda: shutdown.requested,
                              markers, workers):
                if shutdown.requested:
                    return True
                _err(f"the web app did not get ready on {cfg.app_url} (exit status {reflex.poll()})")
                return False
            print(_banner(cfg, with_demo=role == "all"), flush=True)
        supervisors = ([Supervisor(pb_server, say)] if pb_server is not None else []) + \
            [Supervisor(server, say, name) for name, server in sidecars]
        while not shutdown.requested:
            if reflex is not None and reflex.poll() is not None:
                _err(f"the web app stopped (exit status {reflex.returncode})")
                return False
            for supervisor in supervisors:
                if not supervisor.check():
                    return False
                proc = supervisor.server.proc
                if proc is not None and proc not in shutdown.children:
                    shutdown.children.append(proc)
            time.sleep(0.5)
        return True
    except (PBError, RuntimeError, KBError, ValueError) as exc:
        _err(str(exc))
        return False
    finally:
        if shutdown.requested:
            print("\nr42: stopping (Ctrl-C again to stop at once)", flush=True)
        if reflex is not None:
            _stop_group(reflex)
        for _name, server in reversed(sidecars):
            server.stop()
        if pb_server is not None:
            pb_server.stop()
        if web_lock is not None:
            web_lock.release()
