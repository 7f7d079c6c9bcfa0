"""Backups through PocketBase's own backup API: a zip of its data (every topic, relation, suggestion,
user, cost event...) made by PocketBase itself, downloaded to a file; and a restore from such a file.

The Chroma directory is not in the backup: it is derived data, and `r42 chatbot rag-backfill --tenant '*'
--now` rebuilds it from the restored topics.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from r42_app.services.store.pb import PBError, PocketBase

NAME = re.compile(r"^[a-z0-9_-]+\.zip$")


class BackupError(Exception):
    """A backup or restore could not be done; the message says why."""


def backup_name() -> str:
    return datetime.now(UTC).strftime("r42-%Y%m%d-%H%M%S.zip")


def create_backup(pb: PocketBase, target: Path) -> Path:
    """Ask PocketBase for a backup and download it to `target` (a file, or a directory for the default name).

    The zip holds everything (password hashes, the keys that sign sessions, the app's secrets), so it is made
    readable by its owner only (0600, whatever the umask), and it is downloaded beside `target` and renamed into
    place once whole: a download that breaks leaves no truncated zip under the backup's name, and an older backup
    there stays as it was. PocketBase's own copy is deleted also when the download fails."""
    name = backup_name()
    if target.is_dir():
        target = target / name
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        pb.send("POST", "/api/backups", body={"name": name})
        token = pb.send("POST", "/api/files/token")["token"]
    except PBError as exc:
        raise BackupError(f"PocketBase could not make a backup: {exc}") from exc
    part = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        with httpx.stream("GET", f"{pb.base_url}/api/backups/{name}", params={"token": token}, timeout=300) as resp:
            if resp.status_code != 200:
                raise BackupError(f"downloading the backup failed (HTTP {resp.status_code})")
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                for chunk in resp.iter_bytes():
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(part, target)
    except httpx.HTTPError as exc:
        raise BackupError(f"downloading the backup failed: {exc}; {target} was not written") from exc
    except OSError as exc:
        raise BackupError(f"the backup could not be written to {target}: {exc.strerror or exc}") from exc
    finally:
        part.unlink(missing_ok=True)
        try:  # the copy is in `target` now, or the download failed: keep PocketBase's dir small either way
            pb.send("DELETE", f"/api/backups/{name}")
        except PBError:
            pass
    return target


DOWN_WITHIN_S = 15.0  # a restore that PocketBase has not begun by then: it restarted between two looks


def restore_backup(pb: PocketBase, source: Path, wait: float = 60.0) -> None:
    """Upload a backup zip to PocketBase and restore it. PocketBase replaces its data and restarts itself;
    this returns once it answers again."""
    if not source.is_file():
        raise BackupError(f"{source} is not a file")
    name = source.name.lower() if NAME.match(source.name.lower()) else backup_name()
    with source.open("rb") as fh:
        resp = httpx.post(f"{pb.base_url}/api/backups/upload", files={"file": (name, fh, "application/zip")},
                          headers={"Authorization": pb.token}, timeout=300)
    if resp.status_code >= 400:
        raise BackupError(f"PocketBase refused the backup file: {resp.text[:300]}")
    try:
        pb.send("POST", f"/api/backups/{name}/restore")
    except PBError as exc:
        raise BackupError(f"PocketBase could not restore {name}: {exc}") from exc
    # It restarts itself: first see it go down (an answer before that is the old process, and a command run
    # then would meet the restart), then wait until it answers again, twice in a row.
    deadline = time.monotonic() + wait
    down_by = time.monotonic() + DOWN_WITHIN_S
    while time.monotonic() < down_by and pb.health():
        time.sleep(0.1)
    answered = 0
    while time.monotonic() < deadline:
        answered = answered + 1 if pb.health() else 0
        if answered >= 2:
            return
        time.sleep(0.5)
    raise BackupError(f"PocketBase did not come back within {wait:.0f} s after the restore")
