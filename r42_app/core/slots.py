"""Concurrency slots that run out: how many of something (uploads in flight) one user or one tenant holds at once.

A holder takes one slot under each of several keys at once, or none (`take`): "upload:user:<id>" with the user's
limit and "upload:tenant:<id>" with the tenant's. A slot lives `ttl` seconds unless its holder renews it, so a
worker that dies mid-upload leaks it for at most `ttl`; the holder renews while it works and gives it back when
done. Taking again under the same holder is a renewal, never a second slot (a browser tab is one holder).

This is the in-memory book (one worker, tests), on an injected clock; services/runtime/shared_state.py keeps the
same book in Redis for several workers (one Lua script per call, on Redis's clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping


class SlotBook:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._held: dict[str, dict[str, float]] = {}  # key -> holder -> until

    def _live(self, key: str, now: float) -> dict[str, float]:
        held = self._held.get(key, {})
        for holder in [h for h, until in held.items() if until <= now]:
            del held[holder]
        if not held:
            self._held.pop(key, None)
        return held

    def take(self, limits: Mapping[str, int], holder: str, ttl: float) -> bool:
        """One slot under every key of `limits` (key -> how many holders it allows) for `ttl` seconds, or none
        (False: one of the keys is full of other holders). A holder that has a key's slot already keeps it."""
        now = self.clock()
        for key, limit in limits.items():
            held = self._live(key, now)
            if holder not in held and len(held) >= limit:
                return False
        for key in limits:
            self._held.setdefault(key, {})[holder] = now + ttl
        return True

    def renew(self, keys: Iterable[str], holder: str, ttl: float) -> bool:
        """Another `ttl` seconds for the holder's slots; False (nothing renewed) when it lost one (ran out)."""
        now = self.clock()
        keys = list(keys)
        if not all(holder in self._live(key, now) for key in keys):
            return False
        for key in keys:
            self._held[key][holder] = now + ttl
        return True

    def release(self, keys: Iterable[str], holder: str) -> None:
        for key in keys:
            held = self._held.get(key)
            if held is not None:
                held.pop(holder, None)
                if not held:
                    del self._held[key]

    def free(self, limits: Mapping[str, int], holder: str) -> bool:
        """Whether `take` would succeed now (nothing taken)."""
        now = self.clock()
        return all(holder in (held := self._live(key, now)) or len(held) < limit for key, limit in limits.items())

    def held(self, key: str) -> int:
        return len(self._live(key, self.clock()))
