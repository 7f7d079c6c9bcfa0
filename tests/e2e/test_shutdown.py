"""Stopping `r42 serve` (as Ctrl-C or a service manager would) leaves no process behind.

Both run last on their worker (the `stops_served_app` marker, tests/conftest.py): the first stops the worker's
served app; the second starts `r42 serve` ten times in a copy of the source tree (a start rebuilds the frontend in
the working directory, which the served apps of the other worker and of test_workers.py must not see).
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


def test_stopping_at_any_moment_of_a_start_leaves_nothing_behind(tmp_path):
    """Ten starts, each stopped at another moment 0.8 s apart (PocketBase starting, the seed, the web app
    building, running): no process of it is left, and nothing prints a traceback."""
    import os
    import signal
    import subprocess

    from tests.conftest import DEMO_PASSWORD, free_port
    from tests.e2e.conftest import serve_command, tree_copy

    data = tmp_path / "data"
    root = tree_copy(tmp_path, reuse_frontend=True)
    command, extra = serve_command(root)
    for i in range(10):
        env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PORT": str(free_port()), "R42_PB_PORT": str(free_port()),
               "R42_DEMO_PASSWORD": DEMO_PASSWORD, "R42_MCP_ENABLED": "false", **extra}
        env.pop("R42_PB_URL", None)
        # The output goes to a file, not a pipe: a pipe would wait for every process that inherited it, and what
        # is asked here is that `serve` ends and that nothing of it is left (the loop below looks for both).
        log = tmp_path / f"serve-{i}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        time.sleep(0.3 + i * 0.8)  # 0.3 s .. 7.5 s into the start
        os.killpg(proc.pid, signal.SIGTERM) if i % 2 else proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            left = processes_of(data)
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"start {i}: `r42 serve` did not stop within 60 s; running: {left}\n"
                        f"{log.read_text(errors='replace')[-4000:]}")
        output = log.read_text(errors="replace")
        deadline = time.monotonic() + 10
        while processes_of(data) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_of(data) == [], f"start {i}: left {processes_of(data)}\n{output}"
        assert "Traceback" not in output, f"start {i}:\n{output}"
