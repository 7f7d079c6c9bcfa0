"""The layout of docs/DEPLOY.md on one machine, with loopback addresses as machines (issue 50): what
`make demo-cluster` starts and tests/e2e/test_cluster.py drives.

- the **data machine** on 127.0.0.2: `r42 serve --data-only` (PocketBase, Litestream to a replica folder, Redis
  and the Chroma server), data in `BASE/data`;
- two **web machines** on 127.0.0.3 and 127.0.0.4: `r42 serve --web-only`, each with its own data folder (a copy
  of the data machine's `superuser.json` and MCP config) and its own build folder (`REFLEX_WEB_WORKDIR`), on the
  ports after the load balancer's (the second serves the first one's build: same pages, same public address);
- **HAProxy** (Debian's) on 127.0.0.1:R42_PORT in front of them, health-checking `/api/health` every second and
  sending a request whose machine does not answer to the other one. No sticky sessions: a browser's session
  lives in Redis, its chat in the browser.

Every machine is a process group of its own; `kill_web` and `kill_data` end one at once (SIGKILL to every
process of it), as a lost machine would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from r42_app.paths import ROOT
from r42_app.services.runtime.children import die_with_parent
from r42_app.services.runtime.replication import DB_NAME

DATA_HOST = "127.0.0.2"
WEB_HOSTS = ("127.0.0.3", "127.0.0.4")
LB_HOST = "127.0.0.1"
# what each machine is told by the cluster, never inherited from the caller's environment
OWN_SETTINGS = ("R42_PB_URL", "REFLEX_REDIS_URL", "R42_REDIS_URL", "CHROMA_URL", "R42_CHROMA_TOKEN",
                "REFLEX_WEB_WORKDIR", "R42_BIND", "R42_PUBLIC_URL", "R42_DATA_DIR", "R42_REPLICA_URL", "R42_PORT",
                "R42_PB_PORT", "R42_REDIS_PORT", "R42_CHROMA_PORT", "R42_BACKEND_WORKERS")
READY = {"data": "R42's data machine is running", "web": "R42 is running"}

HAPROXY_CONFIG = """\
# written by r42_app/services/runtime/cluster.py
global
    maxconn 2000
    log stdout format raw local0 info
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h
    timeout http-request 30s
    # a request whose machine does not answer goes to another (up to 3 tries)
    option redispatch
    retries 3
frontend r42
    bind {lb}
    default_backend web
backend web
    balance roundrobin
    option httpchk GET /api/health
    http-check expect status 200
    default-server inter 1s fall 2 rise 2
{servers}
"""


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else "")
    if not found:
        raise RuntimeError("no haproxy: install Debian's (`apt-get install haproxy`; `make test-deps` does)")
    return found


@dataclass
class Machine:
    name: str
    role: str  # "data" or "web"
    host: str
    port: int
    data_dir: Path
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    starts: int = field(default=0)

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"{self.name}.log"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _copy_build_folder(source: Path, dest: Path, with_build: bool) -> None:
    """A build folder of its own for a web machine, from another one on this machine: the frontend's packages
    linked (the build tools; the pages it serves are in `build/`), the rest copied."""
    skipped = ("node_modules",) if with_build else ("node_modules", "build", "r42-build.json")
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*skipped), symlinks=True)
    (dest / "node_modules").symlink_to((source / "node_modules").resolve())


def _kill_tree(proc: subprocess.Popen | None, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to a process and everything under it, at once (the machine is gone, not stopping)."""
    if proc is None or proc.poll() is not None:
        return
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.send_signal(sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)


class Cluster:
    """Three machines and a load balancer on loopback addresses, data under `base`."""

    def __init__(self, base: Path, port: int = 3000, *, env: dict[str, str] | None = None, pb_port: int = 8090,
                 redis_port: int = 6390, chroma_port: int = 8001, web_ports: tuple[int, ...] = (),
                 say: Callable[[str], None] = print, start_timeout: float = 600, root: Path = ROOT):
        self.base = Path(base).resolve()
        self.root = Path(root)  # the source tree every machine runs (a copy of it in the tests)
        self.port = port
        self.public_url = f"http://{LB_HOST}:{port}"
        self.say = say
        self.start_timeout = start_timeout
        common = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in OWN_SETTINGS}
        common.setdefault("PYTHONUNBUFFERED", "1")
        if self.root != ROOT:
            common["PYTHONPATH"] = str(self.root)
        self.data = Machine("data", "data", DATA_HOST, pb_port, self.base / "data", {
            **common, "R42_BIND": DATA_HOST, "R42_DATA_DIR": str(self.base / "data"), "R42_PB_PORT": str(pb_port),
            "R42_REDIS_PORT": str(redis_port), "R42_CHROMA_PORT": str(chroma_port),
            "R42_REPLICA_URL": self.replica.as_uri()})
        ports = web_ports or tuple(port + 1 + i for i in range(len(WEB_HOSTS)))
        self.webs = [Machine(f"web-{chr(ord('a') + i)}", "web", host, web_port,
                             self.base / f"web-{chr(ord('a') + i)}" / "data", {
                                 **common, "R42_BIND": host, "R42_PORT": str(web_port),
                                 "R42_PUBLIC_URL": self.public_url,
                                 "R42_DATA_DIR": str(self.base / f"web-{chr(ord('a') + i)}" / "data"),
                                 "REFLEX_WEB_WORKDIR": str(self.base / f"web-{chr(ord('a') + i)}" / ".web"),
                                 "R42_PB_URL": f"http://{DATA_HOST}:{pb_port}",
                                 "CHROMA_URL": f"http://{DATA_HOST}:{chroma_port}"})
                     for i, (host, web_port) in enumerate(zip(WEB_HOSTS, ports, strict=True))]
        self.redis_port = redis_port
        self.lb: subprocess.Popen | None = None

    @property
    def replica(self) -> Path:
        return self.base / "replica"

    @property
    def lb_log(self) -> Path:
        return self.base / "haproxy.log"

    # -- starting -------------------------------------------------------------------------------------------

    def start(self) -> Cluster:
        """The data machine; the web app built once (`r42 build`, with the first web machine's settings); the web
        machines together, each serving that build from its own folder; then the load balancer."""
        self.base.mkdir(parents=True, exist_ok=True)
        self.start_data()
        self.build()
        for web in self.webs:
            self.start_web(web, wait=False)
        for web in self.webs:
            self._wait_ready(web)
        self.start_lb()
        return self

    def _spawn(self, machine: Machine, *args: str, wait: bool = True) -> None:
        machine.data_dir.mkdir(parents=True, exist_ok=True)
        machine.data_dir.chmod(0o700)
        with open(machine.log, "ab") as out:
            machine.proc = subprocess.Popen([sys.executable, "-m", "r42_app.cli", "serve", *args], cwd=self.root,
                                            env=machine.env, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            preexec_fn=die_with_parent())
        machine.starts += 1
        if wait:
            self._wait_ready(machine)

    def _wait_ready(self, machine: Machine) -> None:
        deadline = time.monotonic() + self.start_timeout
        ready = READY[machine.role]
        while machine.log_tail(200_000).count(ready) < machine.starts:
            if machine.proc is None or machine.proc.poll() is not None or time.monotonic() > deadline:
                _kill_tree(machine.proc)
                raise RuntimeError(f"the {machine.name} machine did not start:\n{machine.log_tail()}")
            time.sleep(0.5)

    def start_data(self) -> None:
        self.say(f"starting the data machine on {DATA_HOST} (PocketBase :{self.data.port}, Redis :{self.redis_port}"
                 f", Chroma; replica in {self.replica})")
        self._spawn(self.data, "--data-only")

    def _secrets(self) -> dict[str, str]:
        password = (self.data.data_dir / "redis.password").read_text().strip()
        token = (self.data.data_dir / "chroma.token").read_text().strip()
        return {"REFLEX_REDIS_URL": f"redis://default:{password}@{DATA_HOST}:{self.redis_port}/0",
                "R42_CHROMA_TOKEN": token}

    def build(self) -> None:
        """What an operator does before starting web machines: build the web app once, in the first web machine's
        build folder (`r42 build`: the pages talk to the public address, so every web machine serves this build).
        An unchanged app is not built again."""
        first = self.webs[0]
        first.env.update(self._secrets())
        own = Path(first.env["REFLEX_WEB_WORKDIR"])
        if not own.exists() and (self.root / ".web" / "reflex.install_frontend_packages.cached").exists():
            _copy_build_folder(self.root / ".web", own, with_build=False)  # packages installed: only build
        self.say(f"building the web app for {self.public_url}")
        first.data_dir.mkdir(parents=True, exist_ok=True)
        with open(first.log, "ab") as out:
            done = subprocess.run([sys.executable, "-m", "r42_app.cli", "build"], cwd=self.root, env=first.env,
                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  preexec_fn=die_with_parent(), timeout=self.start_timeout, check=False)
        if done.returncode:
            raise RuntimeError(f"the web app's build failed:\n{first.log_tail()}")

    def start_web(self, web: Machine, wait: bool = True) -> None:
        """What an operator does for a new web machine: copy superuser.json (and the MCP config) from the data
        machine, point it at the data machine, start it. A machine after the first gets the first one's build."""
        web.data_dir.mkdir(parents=True, exist_ok=True)
        for name in ("superuser.json", "mcp.json"):
            if (self.data.data_dir / name).exists():
                shutil.copy2(self.data.data_dir / name, web.data_dir / name)
        web.env.update(self._secrets())
        own = Path(web.env["REFLEX_WEB_WORKDIR"])
        first = Path(self.webs[0].env["REFLEX_WEB_WORKDIR"])
        if not own.exists():
            if web is not self.webs[0] and (first / "r42-build.json").exists():
                _copy_build_folder(first, own, with_build=True)  # the same pages: served as they are
            elif (self.root / ".web" / "reflex.install_frontend_packages.cached").exists():
                _copy_build_folder(self.root / ".web", own, with_build=False)  # packages installed: only build
        self.say(f"starting web machine {web.name} on {web.host}:{web.port}")
        self._spawn(web, "--web-only", wait=wait)

    def start_lb(self) -> None:
        servers = "\n".join(f"    server {web.name} {web.host}:{web.port} check" for web in self.webs)
        config = self.base / "haproxy.cfg"
        config.write_text(HAPROXY_CONFIG.format(lb=f"{LB_HOST}:{self.port}", servers=servers))
        with open(self.lb_log, "ab") as out:
            self.lb = subprocess.Popen([haproxy_binary(), "-f", str(config)], stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True,
                                       preexec_fn=die_with_parent())
        deadline = time.monotonic() + 30
        while not self.lb_serves():
            if self.lb.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"HAProxy did not start:\n{self.lb_log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)
        self.say(f"HAProxy on {self.public_url} in front of " + ", ".join(w.url for w in self.webs))

    def lb_serves(self) -> bool:
        import httpx

        try:
            return httpx.get(f"{self.public_url}/api/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    # -- losing and restoring machines ------------------------------------------------------------------------

    def kill_web(self, web: Machine) -> None:
        """The machine is gone: every process of it SIGKILLed at once."""
        _kill_tree(web.proc)

    def kill_data(self) -> None:
        """PocketBase, Litestream, Redis and Chroma SIGKILLed at once, mid-write."""
        _kill_tree(self.data.proc)

    def lose_database(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            (self.data.data_dir / "pb_data" / f"{DB_NAME}{suffix}").unlink(missing_ok=True)

    def restore_from_replica(self) -> dict:
        """`r42 restore --from-replica --json` on the (stopped) data machine's data dir."""
        done = subprocess.run([sys.executable, "-m", "r42_app.cli", "restore", "--from-replica", "--json"],
                              cwd=self.root, env=self.data.env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"restore failed ({done.returncode}): {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    # -- stopping ---------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """The load balancer first (no new requests), then Ctrl-C to every machine (web machines, then data)."""
        if self.lb is not None and self.lb.poll() is None:
            self.lb.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.lb.wait(10)
        for machine in [*self.webs, self.data]:
            if machine.proc is not None and machine.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    machine.proc.send_signal(signal.SIGINT)
        for machine in [*self.webs, self.data]:
            if machine.proc is not None:
                try:
                    machine.proc.wait(60)
                except subprocess.TimeoutExpired:
                    _kill_tree(machine.proc)


def main() -> int:
    """`make demo-cluster`: the layout on this machine until Ctrl-C, the load balancer on R42_PORT (3000)."""
    from r42_app.settings import load_settings

    cfg = load_settings()
    cluster = Cluster(cfg.data_dir / "cluster", cfg.port, pb_port=cfg.pb_port, redis_port=cfg.redis_port,
                      chroma_port=cfg.chroma_port, say=lambda line: print(f"r42 cluster: {line}", flush=True))
    stopping: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: stopping.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    try:
        cluster.start()
        print("\n".join([
            "", "  R42 runs as three machines behind a load balancer",
            f"  Open        {cluster.public_url}/  (HAProxy)",
            *(f"  {w.name:<11} {w.url}/  (log {w.log})" for w in cluster.webs),
            f"  data        PocketBase {DATA_HOST}:{cluster.data.port}, Redis, Chroma (log {cluster.data.log})",
            f"  replica     {cluster.replica}",
            f"  Sign in as  the demo users, password {cfg.demo_password}",
            "  Stop        Ctrl-C", ""]), flush=True)
        while not stopping:
            for machine in [cluster.data, *cluster.webs]:
                if machine.proc is not None and machine.proc.poll() is not None:
                    print(f"r42 cluster: the {machine.name} machine stopped (see {machine.log})", flush=True)
                    return 1
            time.sleep(1)
        return 0
    except RuntimeError as exc:
        print(f"r42 cluster: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        print("r42 cluster: stopping", flush=True)
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
