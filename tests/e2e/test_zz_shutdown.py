"""Stopping `r42 serve` (as Ctrl-C or a service manager would) leaves no process behind.

Named zz so it runs after the other browser tests, which share the served app.
"""

import time

import psutil


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
