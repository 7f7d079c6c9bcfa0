"""One `r42 serve` per build folder (issue 25): two servers on one checkout shared `.web`, and the first one's page
then talked to the second one's backend ("Cannot connect to server"). The server holds a lock next to its build
folder while it runs; a second one on the same folder refuses at once, naming the first and the way out
(`REFLEX_WEB_WORKDIR`, which moves the build folder). The lock is an flock: it goes with its process, however that
ends, so a crashed server leaves nothing to clean up.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from r42_app.paths import ROOT


def web_dir() -> Path:
    """The Reflex build folder `r42 serve` uses: REFLEX_WEB_WORKDIR, else the checkout's `.web`."""
    given = os.environ.get("REFLEX_WEB_WORKDIR", "")
    return Path(given).resolve() if given else ROOT / ".web"


class WebDirLock:
    def __init__(self, port: int, folder: Path | None = None):
        self.folder = folder or web_dir()
        self.path = self.folder.parent / f".{self.folder.name.lstrip('.')}.r42-serve.lock"
        self.port = port
        self._fd: int | None = None

    def acquire(self) -> WebDirLock:
        """Take the lock, or raise RuntimeError saying which server has it and what to do."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(os.read(fd, 4096) or b"{}")
            except ValueError:
                holder = {}
            os.close(fd)
            who = f"pid {holder.get('pid', '?')}, port {holder.get('port', '?')}"
            raise RuntimeError(
                f"another `r42 serve` ({who}) is using the build folder {self.folder}; two servers on one folder "
                "break each other's pages. Stop that one, or give this one a folder of its own: "
                "REFLEX_WEB_WORKDIR=/some/other/dir r42 serve") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "port": self.port}).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None
