"""The browser tests' frontends and first data, made while the unit and integration tests run (`make test`,
issue 45).

Each browser worker serves its own app, and a first start builds its frontend (~25 s of the ~55 s start, on a
busy machine more), seeds the demo and embeds its ~190 passages (~15 s of a core): both workers did that at once,
at the start of the browser half. So `make test` first runs `python -m tests.prebuild start`: it picks a port for
each browser worker and, in the background at the lowest priority (it takes only what the unit tests leave), runs
`r42 build` for that port into a build folder of its own (`.web-e2e/gwN`); then `r42 serve` once on the first
one's build until the seed is indexed, and keeps the data dir it leaves (`.web-e2e/data`, `make_data`); then builds
test_workers.py's app (`.web-e2e/workers`) and test_cluster.py's web machines (`.web-e2e/cluster`). The browser
half's `served_app` serves on its port from its folder (tests/e2e/conftest.py `prebuilt`), on a copy of that data
dir, as a second `make run` starts: `r42 serve` finds the build current and the seed indexed. Anything amiss (a
failed build, the port taken meanwhile, another tree) and the app builds, seeds and indexes as it always did: this
only moves work, it never decides what is tested.

    python -m tests.prebuild start [WORKERS]   plan and start the builds in the background (default 2 workers)
    python -m tests.prebuild stop              stop a build still running (a failed unit half)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / ".web-e2e"  # ignored by git, not copied by tree_copy
PLAN = FOLDER / "plan.json"
DATA = FOLDER / "data"  # the served apps' first data dir (make_data)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_env(port: int, folder: Path, data_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `r42 build` gets, and what `served_app` must match for its fingerprint (the port, the
    folder; nothing else of the served app's settings is part of a build, but whether its workers share a Redis)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "R42_PUBLIC_URL", "REFLEX_REDIS_URL"))}
    env.update(R42_PORT=str(port), R42_PB_PORT=str(_free_port()), R42_DATA_DIR=str(data_dir),
               REFLEX_WEB_WORKDIR=str(folder), **(extra or {}))
    return env


# Besides one build per browser worker: test_workers.py's `r42 serve --workers 2`, whose workers share a Redis
# (its presence is part of a build; the build never connects to it, so an address that answers nothing will do),
# and test_cluster.py's web machines, whose pages talk to the load balancer's address (the planned port).
NO_REDIS = "redis://127.0.0.1:9/0"
OTHER_BUILDS = {  # in the order the browser half needs them: test_cluster.py is its first module (`slow`)
    "cluster": lambda port: {"REFLEX_REDIS_URL": NO_REDIS, "R42_PUBLIC_URL": f"http://127.0.0.1:{port}"},
    "workers": lambda port: {"REFLEX_REDIS_URL": NO_REDIS},
}


def start(workers: int) -> None:
    stop()
    FOLDER.mkdir(exist_ok=True)
    plan = {f"gw{i}": {"port": _free_port(), "folder": str(FOLDER / f"gw{i}")} for i in range(workers)}
    for name, env in OTHER_BUILDS.items():
        port = _free_port()
        plan[name] = {"port": port, "folder": str(FOLDER / name), "env": env(port)}
    PLAN.write_text(json.dumps({"workers": plan}))
    proc = subprocess.Popen([sys.executable, "-m", "tests.prebuild", "run"], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    PLAN.write_text(json.dumps({"workers": plan, "pid": proc.pid}))
    print(f"building the browser tests' frontends and first data in the background ({FOLDER.relative_to(ROOT)}, "
          "lowest priority)")


def run() -> None:
    """The builds, one after another (two at once would compile in one tree), each writing `done` or `failed`; after
    the browser workers' builds, the served apps' first data dir (`make_data`)."""
    os.nice(19)
    # This runs in a session of its own, and Linux's autogroups (sched_autogroup_enabled) share the CPU between
    # sessions before nice values count inside one: at nice 19 in its own group it still took half of the two cores
    # from the unit tests (f37: their half 400 s against 370). The group itself at nice 19 takes only what is idle.
    try:
        Path("/proc/self/autogroup").write_text("19")
    except OSError:  # no autogroups (a kernel without them, or switched off): nice alone is enough
        pass
    plan = json.loads(PLAN.read_text())["workers"]
    workers = [name for name in plan if name.startswith("gw")]
    for name in workers:
        _build(plan[name])
    if workers:
        ok = (FOLDER / f"{workers[0]}.done").exists() and make_data(plan[workers[0]], DATA)
        (FOLDER / f"{DATA.name}.{'done' if ok else 'failed'}").touch()
    for name in plan:
        if name not in workers:
            _build(plan[name])


def _command() -> list[str]:
    r42 = Path(sys.executable).parent / "r42"
    return [str(r42)] if r42.exists() else [sys.executable, "-m", "r42_app.cli"]


def _build(worker: dict) -> None:
    folder = Path(worker["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    log = folder.parent / f"{folder.name}.log"
    with tempfile.TemporaryDirectory(prefix="r42-prebuild-") as data, open(log, "wb") as out:
        done = subprocess.run([*_command(), "build"], cwd=ROOT,
                              env=build_env(worker["port"], folder, Path(data), worker.get("env")),
                              stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False)
    (folder.parent / f"{folder.name}.{'done' if done.returncode == 0 else 'failed'}").touch()


def make_data(worker: dict, data: Path, timeout: float = 600) -> bool:
    """The data dir a served app's first start leaves once it has settled: `r42 serve` on the first worker's build
    (so it builds nothing), the demo seeded with the tests' password, every passage indexed (the outbox empty);
    then Ctrl-C, which stops PocketBase and the index cleanly. Each browser worker's served app starts on a copy of
    it (tests/e2e/conftest.py `served_app`), as a second `make run` starts on the data of the first, instead of
    seeding and embedding the same ~190 passages again (~15 s of a core each, at the start of the browser half).
    True when it is there."""
    from r42_app.services.store.pb import PocketBase
    from tests.conftest import DEMO_PASSWORD

    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(mode=0o700, parents=True)
    log = data.parent / f"{data.name}.log"
    env = build_env(worker["port"], Path(worker["folder"]), data)
    env.update(R42_DEMO_PASSWORD=DEMO_PASSWORD)
    for name in ("R42_PB_URL", "REFLEX_REDIS_URL", "R42_REDIS_URL", "CHROMA_URL", "R42_REPLICA_URL"):
        env.pop(name, None)
    with open(log, "wb") as out:
        # in this process's group, so `stop` stops it with the builds (Ctrl-C stops what it started)
        proc = subprocess.Popen([*_command(), "serve"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    settled = False
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline and "R42 is running" not in log.read_text(
                errors="replace"):
            time.sleep(1)
        if proc.poll() is None and time.monotonic() < deadline:
            creds = json.loads((data / "superuser.json").read_text())
            pb = PocketBase(f"http://127.0.0.1:{env['R42_PB_PORT']}").as_superuser(creds["email"], creds["password"])
            while proc.poll() is None and time.monotonic() < deadline:
                if not pb.list("outbox", filter='status = "pending"', per_page=1, total=True)["totalItems"]:
                    settled = True
                    break
                time.sleep(1)
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the served apps seed as they always did
        print(f"no prebuilt data: {exc!r}", file=open(log, "a"))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return settled and proc.returncode == 0


def copy_data(into: Path, timeout: float = 600) -> bool:
    """Copy the prebuilt data dir (`make_data`) into `into` (an empty data dir), leaving out what belongs to the run
    that made it (its logs, its run folder, its MCP config), once it is made; False when there is none (no plan,
    or making it failed: the served app then seeds and indexes as it always did)."""
    if not PLAN.exists() or not _finished(DATA, timeout):
        return False
    shutil.copytree(DATA, into, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("run", "*.log", "mcp.json", "mcp-*.jsonl"))
    return True


def stop() -> None:
    """Stop a background build of an earlier start (its group: r42 build, Reflex, bun) and forget its plan."""
    try:
        pid = json.loads(PLAN.read_text()).get("pid")
    except (OSError, ValueError, AttributeError):
        pid = None
    if pid:
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    for marker in (*FOLDER.glob("*.done"), *FOLDER.glob("*.failed")) if FOLDER.is_dir() else ():
        marker.unlink(missing_ok=True)
    PLAN.unlink(missing_ok=True)


def wait_for(worker: str, timeout: float = 600) -> tuple[int, Path] | None:
    """(port, build folder) of `worker`'s prebuilt frontend once its build is done; None when there is no plan for
    it or its build failed (the served app then builds as usual)."""
    try:
        plan = json.loads(PLAN.read_text())["workers"][worker]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    folder = Path(plan["folder"])
    return (int(plan["port"]), folder) if _finished(folder, timeout) else None


def _finished(made: Path, timeout: float) -> bool:
    """Wait for what `run` makes at `made` (a build folder, the data dir): True once its `done` marker is there,
    False on its `failed` marker or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (made.parent / f"{made.name}.done").exists():
            return True
        if (made.parent / f"{made.name}.failed").exists():
            return False
        time.sleep(0.5)
    return False


if __name__ == "__main__":
    what = sys.argv[1:2] or ["start"]
    if what == ["start"]:
        start(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    elif what == ["run"]:
        run()
    elif what == ["stop"]:
        stop()
    else:
        sys.exit(f"usage: python -m tests.prebuild start [WORKERS] | stop (got {sys.argv[1:]})")
