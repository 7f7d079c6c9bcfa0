"""The browser tests' frontends, built while the unit and integration tests run (`make test`, issue 45).

Each browser worker serves its own app, and a first start builds its frontend (~25 s of the ~55 s start, on a
busy machine more): both workers did that at once, at the start of the browser half, while the unit half's last
minutes left a core idle. So `make test` first runs `python -m tests.prebuild start`: it picks a port for each
browser worker and, in the background at the lowest priority (it takes only what the unit tests leave), runs
`r42 build` for that port into a build folder of its own (`.web-e2e/gwN`). The browser half's `served_app` then
serves on that port from that folder (tests/e2e/conftest.py `prebuilt`): `r42 serve` finds the build current and
serves it. Anything amiss (the build failed, the port was taken meanwhile, another tree) and the served app builds
as it always did: this only moves work, it never decides what is tested.

    python -m tests.prebuild start [WORKERS]   plan and start the builds in the background (default 2 workers)
    python -m tests.prebuild stop              stop a build still running (a failed unit half)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / ".web-e2e"  # ignored by git, not copied by tree_copy
PLAN = FOLDER / "plan.json"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_env(port: int, folder: Path, data_dir: Path) -> dict[str, str]:
    """The environment `r42 build` gets, and what `served_app` must match for its fingerprint (the port, the
    folder; nothing else of the served app's settings is part of a build)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "R42_PUBLIC_URL"))}
    env.update(R42_PORT=str(port), R42_PB_PORT=str(_free_port()), R42_DATA_DIR=str(data_dir),
               REFLEX_WEB_WORKDIR=str(folder))
    return env


def start(workers: int) -> None:
    stop()
    FOLDER.mkdir(exist_ok=True)
    plan = {f"gw{i}": {"port": _free_port(), "folder": str(FOLDER / f"gw{i}")} for i in range(workers)}
    PLAN.write_text(json.dumps({"workers": plan}))
    proc = subprocess.Popen([sys.executable, "-m", "tests.prebuild", "run"], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    PLAN.write_text(json.dumps({"workers": plan, "pid": proc.pid}))
    print(f"building the browser tests' frontends in the background ({FOLDER.relative_to(ROOT)}, lowest priority)")


def run() -> None:
    """The builds, one after another (two at once would compile in one tree), each writing `done` or `failed`."""
    os.nice(19)
    plan = json.loads(PLAN.read_text())["workers"]
    r42 = Path(sys.executable).parent / "r42"
    command = [str(r42)] if r42.exists() else [sys.executable, "-m", "r42_app.cli"]
    for worker in plan.values():
        folder = Path(worker["folder"])
        folder.mkdir(parents=True, exist_ok=True)
        log = folder.parent / f"{folder.name}.log"
        with tempfile.TemporaryDirectory(prefix="r42-prebuild-") as data, open(log, "wb") as out:
            done = subprocess.run([*command, "build"], cwd=ROOT, env=build_env(worker["port"], folder, Path(data)),
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False)
        (folder.parent / f"{folder.name}.{'done' if done.returncode == 0 else 'failed'}").touch()


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
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (folder.parent / f"{folder.name}.done").exists():
            return int(plan["port"]), folder
        if (folder.parent / f"{folder.name}.failed").exists():
            return None
        time.sleep(0.5)
    return None


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
