"""Whether a backend worker, and an answer it streams, is alive: one check with one set of limits, for the
Reflex patch (a reconnecting tab whose worker died keeps its session: reflex_patches.py) and the chat window
(an answer whose worker died ends as incomplete: ChatState.stream_check).

Every worker beats into the shared state (services/runtime/shared_state.py) every BEAT_EVERY_S while it runs:
its host, pid and time. A worker is gone when, on this host, its process no longer exists (known at once),
or, elsewhere, its last beat is older than GONE_AFTER_S, three beats (or there is none). An answer is gone
when its worker is, or when it has written nothing for STALE_STREAM_S (its owner record ran out).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import time
from pathlib import Path

from r42_app.services.runtime.shared_state import Beat, SharedState, SharedStateUnavailable

log = logging.getLogger(__name__)

HOST = socket.gethostname()
BEAT_EVERY_S = 3.0
BEAT_TTL_S = 10.0
FRESH_S = 1.5 * BEAT_EVERY_S  # a beat younger than this: alive, no need to wait and see
GONE_AFTER_S = 3 * BEAT_EVERY_S
# An answer that has written nothing for this long is taken as gone, even if its worker lives: longer than a
# turn can be silent while alive (the model's timeout, a high-risk tool waiting 5 minutes for the user's yes).
STALE_STREAM_S = 420.0
STREAM_REFRESH_S = 30.0  # how often a streaming answer renews its owner record (well within STALE_STREAM_S)


def worker_tag(pid: int | None = None) -> str:
    """An opaque name of a backend worker (host and pid, hashed): on the page as `data-r42-worker`, so
    operators and the multi-worker tests can tell which worker a tab is talking to."""
    return hashlib.sha1(f"{HOST}:{pid or os.getpid()}".encode()).hexdigest()[:8]


def this_worker() -> str:
    """This backend worker's name, "host:pid" (read when asked: Granian forks its workers from a process
    that imported this module)."""
    return f"{HOST}:{os.getpid()}"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs. A zombie does not: a worker killed together with its parent waits for init to
    reap it, and an init that does not reap (a container's) leaves it there for good (issue 50: a web machine
    SIGKILLed as a whole, its tabs reconnecting to another machine on the same host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # it went away just now, or there is no /proc to ask (not Linux): then it was there
        return not Path("/proc").is_dir()
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")  # the state after "(command) "


def _local_pid(worker: str) -> int | None:
    """The pid of a worker named "host:pid" on this host (None for a worker elsewhere)."""
    host, _, pid = worker.rpartition(":")
    return int(pid) if host == HOST and pid.isdigit() else None


class Liveness:
    """This worker's heartbeat, and whether other workers and the answers they stream are alive."""

    def __init__(self, shared: SharedState):
        self.shared = shared
        self._task: asyncio.Task | None = None

    async def beat(self) -> None:
        await self.shared.beat(this_worker(), Beat(HOST, os.getpid(), time.time()), BEAT_TTL_S)

    def ensure_beating(self) -> None:
        """Start this worker's heartbeat in the running event loop, unless it beats already."""
        task = self._task
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            self._task = asyncio.get_running_loop().create_task(self._beat_forever())

    def stop(self) -> None:
        """Stop beating (the worker shuts down; its beat runs out after BEAT_TTL_S)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _beat_forever(self) -> None:
        while True:
            try:
                await self.beat()
            except SharedStateUnavailable as exc:  # Redis away for a moment: the next beat tries again
                log.debug("worker heartbeat failed: %s", exc)
            await asyncio.sleep(BEAT_EVERY_S)

    async def worker_alive(self, worker: str, patience: float = 0.0) -> bool:
        """Whether `worker` ("host:pid") lives. Without `patience` the answer is now: no beat, or one older than
        GONE_AFTER_S, is gone. With it, a worker without a fresh beat is watched that many seconds first (a
        stalled event loop, a Redis that restarted)."""
        if worker == this_worker():
            return True
        pid = _local_pid(worker)
        if pid is not None:
            return pid_alive(pid)
        deadline = time.monotonic() + patience
        while True:
            beat = await self.shared.last_beat(worker)
            if beat is not None:
                age = time.time() - beat.at
                if age < FRESH_S:
                    return True
                if age > GONE_AFTER_S:
                    return False
            if time.monotonic() >= deadline:
                return beat is not None  # a beat of the last three: alive; none at all: gone
            await asyncio.sleep(0.5)

    # -- the answers a worker streams ----------------------------------------------------------------

    async def claim_stream(self, run: str) -> None:
        """This worker streams answer `run` (claimed again while it writes, at least every STREAM_REFRESH_S)."""
        self.ensure_beating()
        await self.shared.claim("stream", run, this_worker(), STALE_STREAM_S)

    async def stream_alive(self, run: str) -> bool:
        """Whether the worker streaming `run` lives and the answer has written within STALE_STREAM_S."""
        owner = await self.shared.owner("stream", run)
        return owner is not None and await self.worker_alive(owner)

    async def end_stream(self, run: str) -> None:
        await self.shared.release("stream", run, this_worker())

    async def note_stream(self, run: str) -> float:
        """claim_stream for the chat window, which streams on whatever happens: a shared state out of reach is
        logged (stream_check then lets the answer go on). Returns when (time.monotonic())."""
        try:
            await self.claim_stream(run)
        except SharedStateUnavailable as exc:
            log.warning("noting which worker streams an answer failed: %s", exc)
        return time.monotonic()

    async def forget_stream(self, run: str) -> None:
        try:
            await self.end_stream(run)
        except SharedStateUnavailable as exc:  # its record runs out by itself
            log.warning("ending an answer's record failed: %s", exc)

    # -- the tabs a worker holds (reflex_patches.py) ------------------------------------------------

    async def claim_tab(self, token: str, ttl: float) -> None:
        """This worker holds the websocket of the tab with session `token`."""
        self.ensure_beating()
        await self.shared.claim("tab", token, this_worker(), ttl)

    async def tab_owner(self, token: str) -> str | None:
        return await self.shared.owner("tab", token)
