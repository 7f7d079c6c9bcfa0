"""Limits shared by every backend worker (issues 17 and 21).

With one worker the limiters live in memory (core/ratelimit.py). With several, each worker's own
counts would let a user (or a browser address) go N times as far, so they move to the Redis the
workers already share. Same answers as the in-memory limiters, computed inside Redis by one Lua script
per call, so two workers never both spend the last token: the chat token bucket (`SharedRateLimiter`:
`check` -> 0 or seconds to wait, `refund`) and the sign-in failure window per browser address
(`SharedFailureLimiter`: `take` -> 0 or seconds to wait, `refund`). Async (redis.asyncio): the event
loop never waits on a socket. While Redis cannot be reached, each worker limits on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from r42_app.core.ratelimit import FailureLimiter, RateLimiter

log = logging.getLogger(__name__)

# KEYS[1] bucket; ARGV: rate per second, burst, cost (1 = take, -1 = give back), ttl seconds.
# The clock is Redis's own (TIME), so workers on several machines agree.
_BUCKET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local rate, burst, cost, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens, last = tonumber(b[1]), tonumber(b[2])
if tokens == nil then tokens, last = burst, now end
tokens = math.min(burst, tokens + (now - last) * rate)
local wait = 0
if cost < 0 then
  tokens = math.min(burst, tokens - cost)
elseif tokens >= cost then
  tokens = tokens - cost
else
  wait = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'last', tostring(now))
redis.call('EXPIRE', KEYS[1], ttl)
return tostring(wait)
"""

# KEYS[1] the failures of one address in the current window; ARGV: op (1 = take, -1 = give back), limit,
# window in ms. The window is the key's time to live, so Redis's clock decides when it ends. `take`
# counts the attempt before it is made (parallel attempts cannot all pass) unless the limit is reached,
# and answers the seconds to wait (0 = go ahead).
_FAILURES = """
local op, limit, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if op < 0 then
  if n > 0 then redis.call('DECR', KEYS[1]) end
  return '0'
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then n = 0 end
if n >= limit then return tostring(ttl / 1000) end
if n == 0 then ttl = window end
redis.call('SET', KEYS[1], n + 1, 'PX', ttl)
return '0'
"""


class _SharedScript:
    """One Lua script over the shared Redis, with this worker's in-memory limiter while Redis is away."""

    def __init__(self, redis_url: str, script: str, prefix: str, what: str):
        import redis.asyncio as aioredis

        self.prefix = prefix
        self._what = what
        self._redis = aioredis.from_url(redis_url)
        self._script = self._redis.register_script(script)
        self._down = False

    async def _call(self, key: str, args: list, local: Callable[[], float]) -> float:
        try:
            answer = float(await self._script(keys=[self.prefix + key], args=args))
        except Exception as exc:  # Redis away: limit per worker rather than refuse or stop everyone
            if not self._down:
                log.warning("the shared %s is unavailable (%s); each worker limits on its own meanwhile",
                            self._what, exc)
                self._down = True
            return local()
        if self._down:
            log.warning("the shared %s is back", self._what)
            self._down = False
        return answer

    async def close(self) -> None:
        await self._redis.aclose()


class SharedRateLimiter(_SharedScript):
    """`RateLimiter`'s interface over Redis; `check` and `refund` are coroutines."""

    def __init__(self, redis_url: str, per_minute: float = 12, burst: int = 4, prefix: str = "r42:rl:chat:"):
        super().__init__(redis_url, _BUCKET, prefix, "rate limit")
        self.rate = per_minute / 60.0
        self.burst = burst
        self._ttl = max(60, int(burst / self.rate) + 60) if self.rate > 0 else 3600
        self._local = RateLimiter(per_minute, burst)  # while Redis cannot be reached: this worker's own buckets

    def _run(self, key: str, cost: float):
        def local() -> float:
            if cost < 0:
                self._local.refund(key)
                return 0.0
            return self._local.check(key)

        return self._call(key, [self.rate, self.burst, cost, self._ttl], local)

    async def check(self, key: str) -> float:
        return await self._run(key, 1)

    async def refund(self, key: str) -> None:
        await self._run(key, -1)


class SharedFailureLimiter(_SharedScript):
    """`FailureLimiter`'s `take`/`refund` over Redis (wrong sign-ins per browser address); coroutines."""

    def __init__(self, redis_url: str, limit: int = 10, window: float = 60.0, prefix: str = "r42:rl:signin:"):
        super().__init__(redis_url, _FAILURES, prefix, "sign-in limit")
        self.limit = limit
        self.window = window
        self._local = FailureLimiter(limit=limit, window=window)

    async def take(self, key: str) -> float:
        return await self._call(key, [1, self.limit, int(self.window * 1000)], lambda: self._local.take(key))

    async def refund(self, key: str) -> None:
        def local() -> float:
            self._local.refund(key)
            return 0.0

        await self._call(key, [-1, self.limit, int(self.window * 1000)], local)
