"""`r42 serve` killed outright (SIGKILL, no code of it runs) takes its children along: the kernel sends each the
parent-death signal (services/runtime/children.py), and the web app's process takes its whole process group down
on it (r42_app/reflex_main.py).

A parent started here stands in for `r42 serve`: it starts the real PocketBase and Redis as `r42 serve` does
(spawn_and_wait) and a web-app stand-in as the supervisor starts Reflex (own process group, die_with_parent),
which starts a grandchild in its group as Reflex starts bun and Granian's workers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]

WEB_APP = textwrap.dedent("""
    import subprocess, sys, time
    from r42_app.reflex_main import stop_the_group_on_sigterm
    stop_the_group_on_sigterm()
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(grandchild.pid, flush=True)
    time.sleep(600)
""")

SERVE = textwrap.dedent("""
    import json, subprocess, sys, time
    from pathlib import Path
    from r42_app.services.runtime.children import die_with_parent
    from r42_app.services.runtime.pb_server import PocketBaseServer
    from r42_app.services.runtime.sidecars import RedisServer
    data, pb_port, web_app = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    pb = PocketBaseServer(data / "pb_data", pb_port).start()
    redis = RedisServer(data / "redis").start()
    web = subprocess.Popen([sys.executable, "-c", web_app], stdout=subprocess.PIPE, text=True,
                           start_new_session=True, preexec_fn=die_with_parent())
    grandchild = int(web.stdout.readline())
    print(json.dumps({"PocketBase": pb.proc.pid, "Redis": redis.proc.pid, "web app": web.pid,
                      "web app's child": grandchild, "redis_port": redis.port}), flush=True)
    time.sleep(600)
""")


def gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE  # (a zombie waits for init)
    except psutil.NoSuchProcess:
        return True


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_sigkill_of_serve_stops_pocketbase_redis_and_the_web_apps_group(tmp_path):
    pb_port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    serve = subprocess.Popen([sys.executable, "-c", SERVE, str(tmp_path), str(pb_port), WEB_APP], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    children: dict[str, psutil.Process] = {}
    try:
        started = json.loads(serve.stdout.readline() or "{}")
        redis_port = started.pop("redis_port")
        children = {name: psutil.Process(pid) for name, pid in started.items()}
        assert [name for name, proc in children.items() if gone(proc)] == [] and not port_free(pb_port)

        serve.kill()
        serve.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(gone(proc) for proc in children.values()):
            time.sleep(0.1)
        assert [name for name, proc in children.items() if not gone(proc)] == []
        assert port_free(pb_port) and port_free(redis_port)
    finally:
        for proc in children.values():  # a failed run leaves nothing behind either (psutil knows a reused pid)
            if not gone(proc):
                proc.kill()
        if serve.poll() is None:
            serve.kill()
