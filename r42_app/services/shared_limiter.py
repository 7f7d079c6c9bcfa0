"""The chat rate limit shared by every backend worker (issue 17).

With one worker the limiter lives in memory (core/ratelimit.py). With several, each worker's own
buckets would let a user ask N times as often, so the buckets move to the Redis the workers already
share. Same token bucket, same answers (`check` -> 0 or seconds to wait, `refund`), computed inside Redis
by one Lua script per call, so two workers never both spend a user's last token. Async (redis.asyncio):
the event loop never waits on a socket.
"""

from __future__ import annotations

import logging

from r42_app.core.ratelimit import RateLimiter

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


class SharedRateLimiter:
    """`RateLimiter`'s interface over Redis; `check` and `refund` are coroutines."""

    def __init__(self, redis_url: str, per_minute: float = 12, burst: int = 4, prefix: str = "r42:rl:chat:"):
        import redis.asyncio as aioredis

        self.rate = per_minute / 60.0
        self.burst = burst
        self.prefix = prefix
        self._redis = aioredis.from_url(redis_url)
        self._script = self._redis.register_script(_BUCKET)
        self._ttl = max(60, int(burst / self.rate) + 60) if self.rate > 0 else 3600
        self._local = RateLimiter(per_minute, burst)  # while Redis cannot be reached: this worker's own buckets
        self._down = False

    async def _run(self, key: str, cost: float) -> float:
        try:
            wait = float(await self._script(keys=[self.prefix + key], args=[self.rate, self.burst, cost, self._ttl]))
        except Exception as exc:  # Redis away: limit per worker rather than refuse or stop every chat
            if not self._down:
                log.warning("the shared rate limit is unavailable (%s); each worker limits on its own meanwhile", exc)
                self._down = True
            if cost < 0:
                self._local.refund(key)
                return 0.0
            return self._local.check(key)
        if self._down:
            log.warning("the shared rate limit is back")
            self._down = False
        return wait

    async def check(self, key: str) -> float:
        return await self._run(key, 1)

    async def refund(self, key: str) -> None:
        await self._run(key, -1)

    async def close(self) -> None:
        await self._redis.aclose()
