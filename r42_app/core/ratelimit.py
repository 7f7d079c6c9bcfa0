"""Per-user rate limiting for chat: a token bucket with an injectable clock."""

from __future__ import annotations

import time
from typing import Callable


class RateLimiter:
    """Allow `burst` requests at once and `per_minute` on average; `check` answers 0 (go) or the
    seconds to wait (refused, nothing consumed)."""

    def __init__(self, per_minute: float = 12, burst: int = 4, clock: Callable[[], float] = time.monotonic):
        self.rate = per_minute / 60.0
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def check(self, key: str) -> float:
        now = self.clock()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0
        self._buckets[key] = (tokens, now)
        return (1.0 - tokens) / self.rate
