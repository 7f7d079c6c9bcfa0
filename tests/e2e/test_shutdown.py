"""Stopping `r42 serve` (as Ctrl-C or a service manager would) leaves no process behind.

Both run last on their worker (the `stops_served_app` marker, tests/conftest.py): the first stops the worker's
served app; the second starts `r42 serve` once for every moment of a start, in a copy of the source tree (a start
rebuilds the frontend in the working directory, which the served apps of the other worker and of test_workers.py
must not see). A second start that serves the last build (issue 49): test_cluster.py's second web machine.
"""

import time

import psutil
import pytest

pytestmark = pytest.mark.stops_served_app


def processes_of(data_dir):
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.environ().get("R42_DATA_DIR") == str(data_dir) or any(str(data_dir) in a for a in proc.cmdline()):
                found.append(f"{proc.pid} {proc.info['name']}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_sigterm_stops_pocketbase_and_the_web_app(served_app):
    running = processes_of(served_app.data_dir)
    assert any("pocketbase" in p for p in running), running
    assert served_app.stop() == 0
    deadline = time.monotonic() + 10
    while processes_of(served_app.data_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_of(served_app.data_dir) == []
    assert "R42 is running" in served_app.log.read_text()
    assert "superuser@r42.local" not in served_app.log.read_text()
    assert "Traceback" not in served_app.log.read_text()
    from tests.e2e.conftest import git_status

    # a served run changes no tracked file (reflex.lock, .gitignore)
    assert git_status(served_app.root) == served_app.git_status


# The moments of a start, each the line `r42 serve` (or Reflex) prints as it enters it: None is before the first
# line (Python still importing). A start is stopped just after its moment's line appears, once per moment.
# Stopping a running app is test_sigterm_stops_pocketbase_and_the_web_app's; a start that goes on past the
# compiling rebuilds the whole frontend (a minute on 2 busy cores), and what it starts is Reflex's own children.
MOMENTS = (None, "r42: starting PocketBase", "r42: seed:", "r42: building and starting the web app",
           "Starting Reflex App")


def test_stopping_at_any_moment_of_a_start_leaves_nothing_behind(tmp_path):
    """A start stopped in each of its moments (Python importing, PocketBase starting, the seed, the web app
    starting, Reflex compiling), by Ctrl-C and by SIGTERM to the whole group in turn: no
    process of it is left, and nothing prints a traceback. The moments are found by the lines the start prints, so
    a slower or faster machine stops it in the same ones."""
    import os
    import signal
    import subprocess

    from tests.conftest import DEMO_PASSWORD, free_port
    from tests.e2e.conftest import serve_command, tree_copy

    data = tmp_path / "data"
    root = tree_copy(tmp_path, reuse_frontend=True)
    command, extra = serve_command(root)
    for i, moment in enumerate(MOMENTS):
        env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PORT": str(free_port()), "R42_PB_PORT": str(free_port()),
               "R42_DEMO_PASSWORD": DEMO_PASSWORD, "R42_MCP_ENABLED": "false", **extra}
        env.pop("R42_PB_URL", None)
        # The output goes to a file, not a pipe: a pipe would wait for every process that inherited it, and what
        # is asked here is that `serve` ends and that nothing of it is left (the loop below looks for both).
        log = tmp_path / f"serve-{i}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        if moment is None:
            time.sleep(0.3)
        else:
            deadline = time.monotonic() + 300
            while moment not in log.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
                    pytest.fail(f"start {i} never reached {moment!r}:\n{log.read_text(errors='replace')[-4000:]}")
                time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGTERM) if i % 2 else proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            left = processes_of(data)
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"start {i} ({moment}): `r42 serve` did not stop within 60 s; running: {left}\n"
                        f"{log.read_text(errors='replace')[-4000:]}")
        output = log.read_text(errors="replace")
        deadline = time.monotonic() + 10
        while processes_of(data) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_of(data) == [], f"start {i} ({moment}): left {processes_of(data)}\n{output}"
        assert "Traceback" not in output, f"start {i} ({moment}):\n{output}"
