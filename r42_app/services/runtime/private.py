"""The data dir is its owner's (issue 21): the secrets R42 keeps there, and no access for other local users.

- `secret_file`: a random secret (the embedded Redis's password, the Chroma server's token) in a file of mode
  0600, created once and reused on every later start;
- `close_to_others`: the data dir 0700 and nothing under it open to group or others, so a data dir made by an
  older R42 (PocketBase's `data.db` was 0644) is closed at the next start;
- `PRIVATE_UMASK`: the umask of every server R42 starts, so what they write later is closed too.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
import string
from pathlib import Path

from r42_app.paths import ROOT

PRIVATE_UMASK = 0o077
_ALPHABET = string.ascii_letters + string.digits  # safe in a URL, a config line and a bearer token


def secret_file(path: Path, length: int = 32) -> str:
    """The secret in `path`; a new random one (mode 0600) if the file is missing or empty. Processes that start at
    once agree on one secret: they take turns under a lock on the directory (no lock file left behind), and the
    new secret is written aside and renamed into place, so nobody reads half of it."""
    path = Path(path)
    value = path.read_text().strip() if path.exists() else ""
    if not value:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX)
            value = path.read_text().strip() if path.exists() else ""  # another process may have written it
            if not value:  # missing, or empty after a crash while writing
                value = "".join(secrets.choice(_ALPHABET) for _ in range(length))
                aside = path.with_name(f".{path.name}.{os.getpid()}.new")
                fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as fh:
                    fh.write(value + "\n")
                os.replace(aside, path)
        finally:
            os.close(dir_fd)  # closing releases the lock
    os.chmod(path, 0o600)
    return value


def close_to_others(*paths: Path) -> None:
    """Take the group and other permission bits off each path and everything under it (directories keep
    their owner's bits: 0755 becomes 0700, 0644 becomes 0600). Symbolic links are not followed."""
    for top in paths:
        top = Path(top)
        if not top.exists():
            continue
        _close(top)
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                _close(Path(dirpath) / name)


def _close(path: Path) -> None:
    try:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    except FileNotFoundError:  # a journal or temp file that went away meanwhile
        pass


def private_data_dir(data_dir: Path) -> None:
    """The data dir 0700 and nothing in it open to other local users, an older one included (issue 21); so is
    Reflex's `.states` beside the app (its state files hold users' tokens), which an older run may have left open."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    close_to_others(data_dir)
    if (ROOT / ".states").exists():
        close_to_others(ROOT / ".states")
