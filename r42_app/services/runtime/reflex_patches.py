"""One fix to Reflex for several backend workers (issue 17), applied when the app module loads.

Reflex keeps, in Redis, which worker holds each tab's websocket (a socket record per session token, kept
for an hour). When a tab connects with a token whose record names another worker, Reflex takes it for a
duplicated browser tab and hands it a new token, that is: a new, empty session. That is right for a
duplicated tab, and wrong when the worker that held the socket died: the same tab, reconnecting to a
live worker, would lose its session (signed-in page, open chat window, streaming answer).

So each worker also notes in the shared state that it holds the tab (`Liveness.claim_tab`), and when a tab
reconnects whose worker is gone (services/runtime/liveness.py: its process no longer exists, or it has not
beaten for three beats; the reconnect waits up to RECONNECT_PATIENCE_S to find out), Reflex's record of it
is dropped first: the tab keeps its token and finds its state.

It replaces `RedisTokenManager.link_token_to_sid` and names Reflex's socket record through the private
`_get_redis_key`, so it is written for one Reflex version (WRITTEN_FOR, the pin in requirements.txt):
`apply()` refuses to run on another, and the app fails at boot instead of losing sessions quietly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib import metadata

from r42_app.services.runtime.liveness import GONE_AFTER_S, Liveness, this_worker
from r42_app.services.runtime.shared_state import SharedStateUnavailable

log = logging.getLogger(__name__)

WRITTEN_FOR = "0.10.1"  # the Reflex of requirements.txt (tests/unit/test_reflex_patches.py checks they agree)
RECONNECT_PATIENCE_S = GONE_AFTER_S + 1


class ReflexVersionError(RuntimeError):
    """The installed Reflex is not the one this patch was written for."""


def check_reflex_version() -> None:
    installed = metadata.version("reflex")
    if installed != WRITTEN_FOR:
        raise ReflexVersionError(
            f"r42_app/services/runtime/reflex_patches.py was written for Reflex {WRITTEN_FOR}, but Reflex {installed} "
            f"is installed. Check the patch against RedisTokenManager.link_token_to_sid of Reflex {installed}, then "
            f"set WRITTEN_FOR and the pin in requirements.txt to {installed}.")


_liveness: Callable[[], Liveness] | None = None


async def _forget_dead_owner(manager, token: str, live: Liveness) -> bool:
    """Drop the token's socket record when the worker that held the tab is gone. True if dropped."""
    from redis.exceptions import RedisError

    try:
        await live.beat()  # this worker is alive, before it asks about others
        owner = await live.tab_owner(token)
        if owner is None or owner == this_worker() or await live.worker_alive(owner, RECONNECT_PATIENCE_S):
            return False
        await manager.redis.delete(manager._get_redis_key(token))
    except (SharedStateUnavailable, RedisError, OSError) as exc:  # Reflex's own handling then: a new session
        log.warning("checking a reconnecting session's worker failed: %s", exc)
        return False
    log.info("session %s… reconnected from a worker that is gone; it keeps its state", token[:8])
    return True


def apply(liveness: Callable[[], Liveness]) -> None:
    """Patch Reflex's RedisTokenManager; `liveness` gives this worker's Liveness (asked at each connect).
    Raises ReflexVersionError on a Reflex other than WRITTEN_FOR."""
    global _liveness
    check_reflex_version()
    from reflex.utils import token_manager

    _liveness = liveness
    cls = token_manager.RedisTokenManager
    if getattr(cls, "_r42_patched", False):
        return
    original = cls.link_token_to_sid

    async def link_token_to_sid(self, token: str, sid: str):
        live = _liveness()
        await _forget_dead_owner(self, token, live)
        new_token = await original(self, token, sid)
        try:
            await live.claim_tab(new_token or token, self.token_expiration)
        except SharedStateUnavailable as exc:  # the tab is linked; only a reconnect after a crash would miss it
            log.warning("noting which worker holds a tab failed: %s", exc)
        return new_token

    cls.link_token_to_sid = link_token_to_sid  # type: ignore[method-assign]  # the patch: Reflex's method, wrapped
    cls._r42_patched = True  # type: ignore[attr-defined]  # our mark on Reflex's class: patched once
