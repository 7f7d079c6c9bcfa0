"""One fix to Reflex for several backend workers (issue 17), applied when the app module loads.

Reflex keeps, in Redis, which worker holds each tab's websocket (a socket record per session token, kept
for an hour). When a tab connects with a token whose record names another worker, Reflex takes it for a
duplicated browser tab and hands it a new token, that is: a new, empty session. That is right for a
duplicated tab, and wrong when the worker that held the socket died: the same tab, reconnecting to a
live worker, would lose its session (signed-in page, open chat window, streaming answer).

So every worker keeps a heartbeat key in Redis while it runs (its host, pid and time), and a socket
record whose worker is gone is taken as stale: the reconnecting tab keeps its token and finds its state.
Gone means: on this host, its process no longer exists (known at once); elsewhere, its heartbeat is
older than three beats (the reconnect waits up to that long to find out).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pickle
import socket
import time

log = logging.getLogger(__name__)

HEARTBEAT_PREFIX = "r42:reflex-worker:"
HEARTBEAT_TTL_S = 10
HEARTBEAT_EVERY_S = 3


HOST = socket.gethostname()


async def _beat_once(manager) -> None:
    value = json.dumps({"host": HOST, "pid": os.getpid(), "t": time.time()})
    await manager.redis.set(HEARTBEAT_PREFIX + manager.instance_id, value, ex=HEARTBEAT_TTL_S)


async def _beat(manager) -> None:
    while True:
        try:
            await _beat_once(manager)
        except Exception as exc:  # Redis away for a moment: the next beat tries again
            log.debug("worker heartbeat failed: %s", exc)
        await asyncio.sleep(HEARTBEAT_EVERY_S)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


async def _owner_gone(manager, owner: str) -> bool:
    deadline = time.monotonic() + HEARTBEAT_EVERY_S * 3 + 1
    while True:
        raw = await manager.redis.get(HEARTBEAT_PREFIX + owner)
        if raw is None:  # no beat: gone, unless one comes in time (a stalled loop, a Redis that restarted)
            if time.monotonic() > deadline:
                return True
            await asyncio.sleep(0.5)
            continue
        try:
            beat = json.loads(raw)
            host, pid, at = beat["host"], int(beat["pid"]), float(beat["t"])
        except (ValueError, KeyError, TypeError):
            return False
        if host == HOST:
            return not _pid_alive(pid)
        age = time.time() - at
        if age < HEARTBEAT_EVERY_S * 1.5:
            return False
        if age > HEARTBEAT_EVERY_S * 3 or time.monotonic() > deadline:
            return True
        await asyncio.sleep(0.5)


def _ensure_heartbeat(manager) -> None:
    task = getattr(manager, "_r42_heartbeat", None)
    if task is None or task.done():
        manager._r42_heartbeat = asyncio.get_running_loop().create_task(_beat(manager))


async def _forget_dead_owner(manager, token: str) -> bool:
    """Drop the token's socket record when the worker it names has no heartbeat. True if dropped."""
    key = manager._get_redis_key(token)
    raw = await manager.redis.get(key)
    if raw is None:
        return False
    try:
        owner = pickle.loads(raw).instance_id
    except Exception:  # unreadable record: leave Reflex's own handling alone
        return False
    if owner == manager.instance_id or not await _owner_gone(manager, owner):
        return False
    await manager.redis.delete(key)
    log.info("session %s… reconnected from a worker that is gone; it keeps its state", token[:8])
    return True


def apply() -> None:
    from reflex.utils import token_manager

    cls = token_manager.RedisTokenManager
    if getattr(cls, "_r42_patched", False):
        return
    original = cls.link_token_to_sid

    async def link_token_to_sid(self, token: str, sid: str):
        try:
            _ensure_heartbeat(self)
            await _beat_once(self)
            await _forget_dead_owner(self, token)
        except Exception as exc:  # never stop a connect over this: Reflex's own behaviour then
            log.warning("checking a reconnecting session's worker failed: %s", exc)
        return await original(self, token, sid)

    cls.link_token_to_sid = link_token_to_sid
    cls._r42_patched = True
