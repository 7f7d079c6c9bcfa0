"""Per-user rate limiting for chat: a token bucket with an injectable clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Limiter(Protocol):
    """A per-key token bucket as the chat turn and the tool dispatcher use one: services/runtime/shared_state.py's
    SharedRateLimiter, over the workers' Redis or one process's memory (a RateLimiter of this module inside)."""

    async def check(self, key: str) -> float:
        """0 (go, a token taken) or the seconds to wait (refused, nothing consumed)."""

    async def refund(self, key: str) -> None:
        """Give back the token of a `check` whose request was refused for another reason."""


class FailureCounter(Protocol):
    """Failures per key in a window, counted before the attempt (`FailureLimiter`'s take/refund), as sign-in uses
    them: services/runtime/shared_state.py's SharedFailureLimiter, over Redis or one process's memory."""

    async def take(self, key: str) -> float:
        """0: go ahead (the attempt counts as a failure until `refund`), else the seconds to wait."""

    async def refund(self, key: str) -> None:
        """The attempt of a `take` was no failure."""


class RateLimiter:
    """Allow `burst` requests at once and `per_minute` on average; `check` answers 0 (go) or the
    seconds to wait (refused, nothing consumed)."""

    def __init__(self, per_minute: float = 12, burst: int = 4, clock: Callable[[], float] = time.monotonic,
                 max_keys: int | None = None):
        self.rate = per_minute / 60.0
        self.burst = burst
        self.clock = clock
        self.max_keys = max_keys  # a bound on the keys remembered: the least recently checked is forgotten first
        self._buckets: dict[str, tuple[float, float]] = {}

    def peek(self, key: str) -> float:
        """What `check` would answer now, without taking a token (a cheap early refusal)."""
        now = self.clock()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def check(self, key: str) -> float:
        now = self.clock()
        if self.max_keys is None:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
        else:  # bounded: the key moves to the end (most recent), the oldest goes when there are too many
            tokens, last = self._buckets.pop(key, (float(self.burst), now))
            while len(self._buckets) >= self.max_keys:
                del self._buckets[next(iter(self._buckets))]
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0
        self._buckets[key] = (tokens, now)
        return (1.0 - tokens) / self.rate


    def refund(self, key: str) -> None:
        """Give back the token of a `check` that went ahead but whose request was refused for another reason."""
        if key in self._buckets:
            tokens, last = self._buckets[key]
            self._buckets[key] = (min(float(self.burst), tokens + 1.0), last)


class FailureLimiter:
    """At most `limit` failures per key in a fixed window of `window` seconds (sign-in attempts per client
    address). `wait(key)` answers 0 (go) or the seconds until the window ends; only failures count.
    `take`/`refund` count an attempt before it is made and give it back when it was no failure, so
    attempts made at the same moment cannot all pass the check (services/runtime/shared_state.py does the same
    in Redis for several workers)."""

    def __init__(self, limit: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 10_000):
        self.limit = limit
        self.window = window
        self.clock = clock
        self.max_keys = max_keys
        self._windows: dict[str, tuple[int, float]] = {}  # key -> (failures, window start)

    def wait(self, key: str) -> float:
        count, start = self._windows.get(key, (0, 0.0))
        left = start + self.window - self.clock()
        return left if count >= self.limit and left > 0 else 0.0

    def failed(self, key: str) -> None:
        now = self.clock()
        count, start = self._windows.get(key, (0, now))
        if now - start >= self.window:
            count, start = 0, now
        self._windows[key] = (count + 1, start)
        if len(self._windows) > self.max_keys:  # forget windows that are over (bounded memory)
            self._windows = {k: v for k, v in self._windows.items() if now - v[1] < self.window}

    def take(self, key: str) -> float:
        """0: go ahead (the attempt counts as a failure until `refund`), else the seconds to wait."""
        left = self.wait(key)
        if left > 0:
            return left
        self.failed(key)
        return 0.0

    def refund(self, key: str) -> None:
        """The attempt of a `take` was no failure (a success, or the server could not say)."""
        count, start = self._windows.get(key, (0, 0.0))
        if count > 0 and self.clock() - start < self.window:
            self._windows[key] = (count - 1, start)
