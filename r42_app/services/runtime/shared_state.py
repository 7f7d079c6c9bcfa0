"""The state the backend workers share (issue 23): one interface, two homes.

With one backend worker it lives in this process (`MemorySharedState`). With several (`r42 serve --workers N`,
a Redis URL) it lives in the Redis they share (`RedisSharedState`), so what one worker did, another sees:

- **confirmations** of high-risk external tool calls: a turn waits for one in the worker that runs it; the
  user's answer (the chat window's Toestaan, `POST /api/chat/confirm`) may reach any worker;
- **rate limits** (a token bucket per key: the chat per user, external tools per user and tool) and
  **failure limits** (wrong passwords per browser address, in a fixed window);
- **heartbeats**: a worker says it is alive (its host, pid and time); services/runtime/liveness.py decides
  from them whether it still is;
- **owners**: which worker streams a running answer (`stream`), which holds a tab's websocket (`tab`), and
  which signed-in admin a tab's upload permit is for (`upload`, services/uploads.py);
- **slots**: how many uploads one user and one tenant have in flight (core/slots.py's book), each slot running
  out unless its holder renews it, so a worker that dies does not keep it;
- **ended sessions**: a token signed out ("Afmelden") or every session of a user ("Overal afmelden"), so the tabs'
  short session caches on every worker stop accepting them at once (services/store/auth.py `ended_since`).

In Redis every key has a time to live, so nothing outlives its use, and what must not race (taking the last
token, answering a confirmation once) is one Lua script. While Redis cannot be reached, limits are counted
by each worker on its own (refusing everyone, or no one, would be worse); everything else raises
`SharedStateUnavailable`, for the caller to turn into a message.

The limiters that the chat turn, the sign-in and the external tools use are views over a `SharedState`
(`SharedRateLimiter`, `SharedFailureLimiter`), built in r42_app/container.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from r42_app.core.mcp import CONFIRM_TTL_S, Confirmation, ConfirmationBook, ConfirmationError, arguments_digest
from r42_app.core.ratelimit import FailureLimiter, RateLimiter
from r42_app.core.slots import SlotBook

log = logging.getLogger(__name__)
T = TypeVar("T")

PREFIX = "r42:"
BEAT_PREFIX = PREFIX + "beat:"  # + a worker's name: its last heartbeat (JSON host, pid, t)
# What a refused answer says in logs and to the CLI (users read the catalogue's confirm.<kind>, core/messages.py).
NOTHING_WAITS = "nothing waits for this confirmation any more"
MESSAGES = {"unknown": "no such confirmation (any more)", "other_user": "this confirmation is another user's",
            "expired": "this confirmation expired (after 5 minutes)", "used": "this confirmation was used already",
            "closed": NOTHING_WAITS}
# An answered, expired or abandoned confirmation is kept this much longer, so a late answer hears why
# (410 expired, 409 used) rather than 404.
CONFIRM_GRACE_S = 60.0


class SharedStateUnavailable(RuntimeError):
    """The shared state cannot be reached (its Redis is away)."""


@dataclass(frozen=True)
class Beat:
    """A worker's heartbeat: where it runs and when it last said it is alive (`time.time()`)."""

    host: str
    pid: int
    at: float


class SharedState(ABC):
    """What the backend workers share. Every method is a coroutine; keys are plain strings."""

    # -- confirmations of high-risk tool calls ----------------------------------------------------

    @abstractmethod
    async def put_confirmation(self, user_id: str, tool: str, arguments: Any, ttl: float) -> Confirmation:
        """A new pending confirmation, bound to this user, tool and exact arguments, answerable for `ttl` s."""

    @abstractmethod
    async def answer_confirmation(self, confirmation_id: str, user_id: str, decision: str) -> None:
        """The user's answer, from any worker: used once, and the waiting turn wakes with `decision`. Raises
        ConfirmationError: unknown, other_user (nothing used), expired, used, closed (nothing waits any more)."""

    @abstractmethod
    async def wait_confirmation(self, confirmation_id: str, timeout: float) -> str | None:
        """The decision once it comes, or None after `timeout` seconds."""

    @abstractmethod
    async def cancel_confirmation(self, confirmation_id: str) -> None:
        """Nothing waits for it any more (answered, timed out or the turn ended): a later answer is refused."""

    # -- limits -----------------------------------------------------------------------------------

    @abstractmethod
    async def take_token(self, key: str, rate: float, burst: int) -> float:
        """Take a token of `key`'s bucket (`burst` at most, `rate` a second back): 0, or the seconds to wait
        (nothing taken)."""

    @abstractmethod
    async def refund_token(self, key: str, rate: float, burst: int) -> None:
        """Give back the token of a request that was refused for another reason."""

    @abstractmethod
    async def take_failure(self, key: str, limit: int, window: float) -> float:
        """Count an attempt as a failure before it is made (`limit` per `window` seconds): 0, or the seconds
        until the window ends (nothing counted)."""

    @abstractmethod
    async def refund_failure(self, key: str, limit: int, window: float) -> None:
        """The attempt of a `take_failure` was no failure."""

    # -- slots ------------------------------------------------------------------------------------

    @abstractmethod
    async def take_slots(self, limits: dict[str, int], holder: str, ttl: float) -> bool:
        """One slot under every key of `limits` (key -> holders allowed) for `ttl` seconds, or none (False). A
        holder that holds a key's slot already keeps it (renewed)."""

    @abstractmethod
    async def renew_slots(self, keys: list[str], holder: str, ttl: float) -> bool:
        """Another `ttl` seconds for the holder's slots; False when it lost one (it ran out)."""

    @abstractmethod
    async def release_slots(self, keys: list[str], holder: str) -> None:
        """The holder is done."""

    @abstractmethod
    async def slots_free(self, limits: dict[str, int], holder: str) -> bool:
        """Whether `take_slots` would succeed now (nothing taken)."""

    # -- ended sessions (issue 44) ---------------------------------------------------------------

    @abstractmethod
    async def note_ended(self, key: str, at: float, ttl: float) -> None:
        """The sessions under `key` (a token's digest, or a user for all of theirs) ended at `at` (time.time()); kept
        for `ttl` seconds (as long as such a session could still be cached)."""

    @abstractmethod
    async def ended_at(self, keys: list[str]) -> float:
        """When the last of the sessions under `keys` ended (`note_ended`), 0.0 when none did."""

    # -- heartbeats -------------------------------------------------------------------------------

    @abstractmethod
    async def beat(self, name: str, beat: Beat, ttl: float) -> None:
        """`name` is alive: its beat, kept for `ttl` seconds."""

    @abstractmethod
    async def last_beat(self, name: str) -> Beat | None:
        """`name`'s last beat of the past `ttl` seconds, or None."""

    # -- owners -----------------------------------------------------------------------------------

    @abstractmethod
    async def claim(self, what: str, key: str, owner: str, ttl: float) -> None:
        """`owner` owns `what` `key` (a "stream" run, a "tab" token) for `ttl` seconds from now."""

    @abstractmethod
    async def owner(self, what: str, key: str) -> str | None:
        """Who owns it, or None (never claimed, released, or not claimed again within its ttl)."""

    @abstractmethod
    async def release(self, what: str, key: str, owner: str) -> None:
        """`owner` is done with it (left alone if someone else has claimed it since)."""

    @abstractmethod
    async def put_once(self, key: str, value: str, ttl: float) -> None:
        """Keep `value` under `key` for `ttl` seconds, to be taken once (a sign-in's round trip, a sign-in code)."""

    @abstractmethod
    async def take_once(self, key: str) -> str | None:
        """The value kept under `key`, removed in the same step (a second take, on any worker, finds nothing)."""

    @abstractmethod
    async def close(self) -> None:
        """Close connections."""


class MemorySharedState(SharedState):
    """One worker's shared state: in this process, on core/ratelimit.py's limiters and core/mcp.py's book."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._book = ConfirmationBook(clock, CONFIRM_TTL_S)
        self._answers: dict[str, asyncio.Future] = {}
        self._buckets: dict[tuple[float, int], RateLimiter] = {}
        self._windows: dict[tuple[int, float], FailureLimiter] = {}
        self._kept: dict[str, tuple[Any, float]] = {}  # beats and owners: key -> (value, until)
        self._slots = SlotBook(clock)

    async def put_confirmation(self, user_id: str, tool: str, arguments: Any, ttl: float) -> Confirmation:
        confirmation = self._book.issue(user_id, tool, arguments, ttl)
        self._answers[confirmation.id] = asyncio.get_running_loop().create_future()
        return confirmation

    async def answer_confirmation(self, confirmation_id: str, user_id: str, decision: str) -> None:
        self._book.redeem(confirmation_id, user_id)
        waiting = self._answers.get(confirmation_id)
        if waiting is None or waiting.done():
            raise ConfirmationError("unknown", NOTHING_WAITS)
        waiting.set_result(decision)

    async def wait_confirmation(self, confirmation_id: str, timeout: float) -> str | None:
        waiting = self._answers.get(confirmation_id)
        if waiting is None:
            return None
        try:
            return await asyncio.wait_for(waiting, timeout)
        except TimeoutError:
            return None

    async def cancel_confirmation(self, confirmation_id: str) -> None:
        waiting = self._answers.pop(confirmation_id, None)
        if waiting is not None and not waiting.done():
            waiting.cancel()

    def _bucket(self, rate: float, burst: int) -> RateLimiter:
        if (rate, burst) not in self._buckets:
            self._buckets[(rate, burst)] = RateLimiter(per_minute=rate * 60.0, burst=burst, clock=self.clock)
        return self._buckets[(rate, burst)]

    def _window(self, limit: int, window: float) -> FailureLimiter:
        if (limit, window) not in self._windows:
            self._windows[(limit, window)] = FailureLimiter(limit=limit, window=window, clock=self.clock)
        return self._windows[(limit, window)]

    async def take_token(self, key: str, rate: float, burst: int) -> float:
        return self._bucket(rate, burst).check(key)

    async def refund_token(self, key: str, rate: float, burst: int) -> None:
        self._bucket(rate, burst).refund(key)

    async def take_failure(self, key: str, limit: int, window: float) -> float:
        return self._window(limit, window).take(key)

    async def refund_failure(self, key: str, limit: int, window: float) -> None:
        self._window(limit, window).refund(key)

    async def take_slots(self, limits: dict[str, int], holder: str, ttl: float) -> bool:
        return self._slots.take(limits, holder, ttl)

    async def renew_slots(self, keys: list[str], holder: str, ttl: float) -> bool:
        return self._slots.renew(keys, holder, ttl)

    async def release_slots(self, keys: list[str], holder: str) -> None:
        self._slots.release(keys, holder)

    async def slots_free(self, limits: dict[str, int], holder: str) -> bool:
        return self._slots.free(limits, holder)

    def _keep(self, key: str, value: Any, ttl: float) -> None:
        now = self.clock()
        if len(self._kept) > 10_000:  # forget what has run out (bounded memory)
            self._kept = {k: v for k, v in self._kept.items() if v[1] > now}
        self._kept[key] = (value, now + ttl)

    def _get(self, key: str) -> Any:
        value, until = self._kept.get(key, (None, 0.0))
        return value if until > self.clock() else None

    async def note_ended(self, key: str, at: float, ttl: float) -> None:
        self._keep(f"ended:{key}", max(at, self._get(f"ended:{key}") or 0.0), ttl)

    async def ended_at(self, keys: list[str]) -> float:
        return max((self._get(f"ended:{key}") or 0.0 for key in keys), default=0.0)

    async def beat(self, name: str, beat: Beat, ttl: float) -> None:
        self._keep(f"beat:{name}", beat, ttl)

    async def last_beat(self, name: str) -> Beat | None:
        return self._get(f"beat:{name}")

    async def claim(self, what: str, key: str, owner: str, ttl: float) -> None:
        self._keep(f"owner:{what}:{key}", owner, ttl)

    async def owner(self, what: str, key: str) -> str | None:
        return self._get(f"owner:{what}:{key}")

    async def release(self, what: str, key: str, owner: str) -> None:
        if self._get(f"owner:{what}:{key}") == owner:
            del self._kept[f"owner:{what}:{key}"]

    async def put_once(self, key: str, value: str, ttl: float) -> None:
        self._keep(f"once:{key}", value, ttl)

    async def take_once(self, key: str) -> str | None:
        value = self._get(f"once:{key}")
        self._kept.pop(f"once:{key}", None)
        return value

    async def close(self) -> None:
        """Nothing to close in memory."""


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

# KEYS[1] the failures of one key in the current window; ARGV: op (1 = take, -1 = give back), limit,
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

# KEYS[1] the confirmation (a hash: user, tool, digest, state), KEYS[2] the list its waiter pops the answer
# from; ARGV: user, decision, grace in ms. The hash lives ttl + grace: within its last `grace` it is expired.
_ANSWER = """
local c = redis.call('HMGET', KEYS[1], 'user', 'state')
if not c[1] then return 'unknown' end
if c[2] == 'used' then return 'used' end
if c[1] ~= ARGV[1] then return 'other_user' end
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= tonumber(ARGV[3]) then return 'expired' end
if c[2] ~= 'pending' then return 'closed' end
redis.call('HSET', KEYS[1], 'state', 'used')
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
return 'ok'
"""

# KEYS[1] the confirmation: a pending one is closed (an answer already given stays `used`).
_CANCEL = """
if redis.call('HGET', KEYS[1], 'state') == 'pending' then redis.call('HSET', KEYS[1], 'state', 'closed') end
return 1
"""

# KEYS: one sorted set per slot key (member: holder, score: until, in ms of Redis's clock); ARGV: op (take, free,
# renew), holder, ttl in ms, then the limit of each key. take: a slot under every key or none (0); free: whether
# take would succeed; renew: 0 (nothing renewed) when the holder lost a slot. Every set lives as long as its last
# slot.
_SLOTS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, holder, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local mine = redis.call('ZSCORE', key, holder)
  if op == 'renew' then
    if not mine then return 0 end
  elseif not mine and redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then
    return 0
  end
end
if op == 'free' then return 1 end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, holder)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', key, math.max(1, tonumber(last[2]) - now))
end
return 1
"""

# KEYS[1] an owner key; ARGV[1] the owner that is done: deleted only if it still names that owner.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


def _redis_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError, OSError)


class RedisSharedState(SharedState):
    """Several workers' shared state, in their Redis (redis.asyncio: the event loop never waits on a socket)."""

    def __init__(self, redis_url: str, confirm_grace: float = CONFIRM_GRACE_S):
        import redis.asyncio as aioredis

        self._redis = aioredis.from_url(redis_url)
        self._bucket = self._redis.register_script(_BUCKET)
        self._failures = self._redis.register_script(_FAILURES)
        self._answer = self._redis.register_script(_ANSWER)
        self._cancel = self._redis.register_script(_CANCEL)
        self._release = self._redis.register_script(_RELEASE)
        self._slot_script = self._redis.register_script(_SLOTS)
        self._grace = confirm_grace
        self._errors = _redis_errors()
        self._local = MemorySharedState()  # limits while Redis cannot be reached: this worker's own counts
        self._down = False

    async def _ask(self, call: Awaitable[T]) -> T:
        """Redis's answer; SharedStateUnavailable while it cannot be reached."""
        try:
            return await call
        except self._errors as exc:
            raise SharedStateUnavailable(f"the shared state (Redis) cannot be reached: {exc}") from exc

    async def _limit(self, script: Any, key: str, args: list, local: Callable[[], Awaitable[float]]) -> float:
        """A limit script's answer; while Redis is away, this worker's own limit (logged once each way)."""
        try:
            answer = float(await script(keys=[f"{PREFIX}rl:{key}"], args=args))
        except self._errors as exc:
            if not self._down:
                log.warning("the shared limits are unavailable (%s); each worker limits on its own meanwhile", exc)
                self._down = True
            return await local()
        if self._down:
            log.warning("the shared limits are back")
            self._down = False
        return answer

    @staticmethod
    def _confirmation_keys(confirmation_id: str) -> list[str]:
        key = f"{PREFIX}confirm:{confirmation_id}"
        return [key, key + ":answer"]

    async def put_confirmation(self, user_id: str, tool: str, arguments: Any, ttl: float) -> Confirmation:
        confirmation = Confirmation(secrets.token_urlsafe(16), user_id, tool, arguments_digest(arguments),
                                    time.time() + ttl)
        key, _ = self._confirmation_keys(confirmation.id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"user": user_id, "tool": tool, "digest": confirmation.digest, "state": "pending"})
            pipe.pexpire(key, int((ttl + self._grace) * 1000))
            await self._ask(pipe.execute())
        return confirmation

    async def answer_confirmation(self, confirmation_id: str, user_id: str, decision: str) -> None:
        outcome = (await self._ask(self._answer(keys=self._confirmation_keys(confirmation_id),
                                                args=[user_id, decision, int(self._grace * 1000)]))).decode()
        if outcome != "ok":
            raise ConfirmationError("unknown" if outcome == "closed" else outcome, MESSAGES[outcome])

    async def wait_confirmation(self, confirmation_id: str, timeout: float) -> str | None:
        _, answers = self._confirmation_keys(confirmation_id)
        # redis-py types a command for its sync and asyncio clients at once; this one's answer is awaited
        popped = await self._ask(cast("Awaitable[list[bytes] | None]",
                                      self._redis.blpop([answers], timeout=max(timeout, 0.01))))
        return None if popped is None else popped[1].decode()

    async def cancel_confirmation(self, confirmation_id: str) -> None:
        await self._ask(self._cancel(keys=self._confirmation_keys(confirmation_id)[:1]))

    @staticmethod
    def _bucket_ttl(rate: float, burst: int) -> int:
        return max(60, int(burst / rate) + 60) if rate > 0 else 3600

    async def take_token(self, key: str, rate: float, burst: int) -> float:
        return await self._limit(self._bucket, key, [rate, burst, 1, self._bucket_ttl(rate, burst)],
                                 lambda: self._local.take_token(key, rate, burst))

    async def refund_token(self, key: str, rate: float, burst: int) -> None:
        async def local() -> float:
            await self._local.refund_token(key, rate, burst)
            return 0.0

        await self._limit(self._bucket, key, [rate, burst, -1, self._bucket_ttl(rate, burst)], local)

    async def take_failure(self, key: str, limit: int, window: float) -> float:
        return await self._limit(self._failures, key, [1, limit, int(window * 1000)],
                                 lambda: self._local.take_failure(key, limit, window))

    async def refund_failure(self, key: str, limit: int, window: float) -> None:
        async def local() -> float:
            await self._local.refund_failure(key, limit, window)
            return 0.0

        await self._limit(self._failures, key, [-1, limit, int(window * 1000)], local)

    async def _slot_call(self, op: str, keys: list[str], holder: str, ttl: float, limits: list[int],
                         local: Callable[[], Awaitable[bool]]) -> bool:
        """The slot script's answer; while Redis is away, this worker's own book (as for the limits)."""
        try:
            answer = await self._slot_script(keys=[f"{PREFIX}slots:{k}" for k in keys],
                                             args=[op, holder, int(ttl * 1000), *limits])
        except self._errors as exc:
            if not self._down:
                log.warning("the shared slots are unavailable (%s); each worker counts its own meanwhile", exc)
                self._down = True
            return await local()
        if self._down:
            log.warning("the shared slots are back")
            self._down = False
        return bool(int(answer))

    async def take_slots(self, limits: dict[str, int], holder: str, ttl: float) -> bool:
        return await self._slot_call("take", list(limits), holder, ttl, list(limits.values()),
                                     lambda: self._local.take_slots(limits, holder, ttl))

    async def renew_slots(self, keys: list[str], holder: str, ttl: float) -> bool:
        return await self._slot_call("renew", keys, holder, ttl, [],
                                     lambda: self._local.renew_slots(keys, holder, ttl))

    async def slots_free(self, limits: dict[str, int], holder: str) -> bool:
        return await self._slot_call("free", list(limits), holder, 0, list(limits.values()),
                                     lambda: self._local.slots_free(limits, holder))

    async def release_slots(self, keys: list[str], holder: str) -> None:
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                for key in keys:
                    pipe.zrem(f"{PREFIX}slots:{key}", holder)
                await pipe.execute()
        except self._errors as exc:
            log.warning("giving back upload slots failed (%s); they run out on their own", exc)
        await self._local.release_slots(keys, holder)

    async def note_ended(self, key: str, at: float, ttl: float) -> None:
        await self._ask(self._redis.set(f"{PREFIX}ended:{key}", repr(at), px=max(1, int(ttl * 1000))))

    async def ended_at(self, keys: list[str]) -> float:
        if not keys:
            return 0.0
        found = await self._ask(self._redis.mget([f"{PREFIX}ended:{key}" for key in keys]))
        times = []
        for raw in found:
            try:
                times.append(float(raw) if raw is not None else 0.0)
            except ValueError:  # not written by us: a session ended (a re-check with PocketBase decides)
                times.append(float("inf"))
        return max(times, default=0.0)

    async def beat(self, name: str, beat: Beat, ttl: float) -> None:
        value = json.dumps({"host": beat.host, "pid": beat.pid, "t": beat.at})
        await self._ask(self._redis.set(BEAT_PREFIX + name, value, px=int(ttl * 1000)))

    async def last_beat(self, name: str) -> Beat | None:
        raw = await self._ask(self._redis.get(BEAT_PREFIX + name))
        if raw is None:
            return None
        try:
            record = json.loads(raw)
            return Beat(str(record["host"]), int(record["pid"]), float(record["t"]))
        except (ValueError, KeyError, TypeError) as exc:  # not written by us: no beat
            log.warning("unreadable heartbeat of %s: %s", name, exc)
            return None

    async def claim(self, what: str, key: str, owner: str, ttl: float) -> None:
        await self._ask(self._redis.set(f"{PREFIX}owner:{what}:{key}", owner, px=int(ttl * 1000)))

    async def owner(self, what: str, key: str) -> str | None:
        raw = await self._ask(self._redis.get(f"{PREFIX}owner:{what}:{key}"))
        return None if raw is None else raw.decode()

    async def release(self, what: str, key: str, owner: str) -> None:
        await self._ask(self._release(keys=[f"{PREFIX}owner:{what}:{key}"], args=[owner]))

    async def put_once(self, key: str, value: str, ttl: float) -> None:
        await self._ask(self._redis.set(f"{PREFIX}once:{key}", value, px=max(1, int(ttl * 1000))))

    async def take_once(self, key: str) -> str | None:
        found = await self._ask(self._redis.getdel(f"{PREFIX}once:{key}"))
        return found.decode() if isinstance(found, bytes) else found

    async def close(self) -> None:
        await self._redis.aclose()


class SharedRateLimiter:
    """`RateLimiter`'s check/refund (coroutines) over a SharedState: one bucket per key under `name`
    ("chat" per user, "tool" per user and tool), the same for every worker."""

    def __init__(self, shared: SharedState, name: str, per_minute: float = 12, burst: int = 4):
        self.shared = shared
        self.name = name
        self.rate = per_minute / 60.0
        self.burst = burst

    async def check(self, key: str) -> float:
        return await self.shared.take_token(f"{self.name}:{key}", self.rate, self.burst)

    async def refund(self, key: str) -> None:
        await self.shared.refund_token(f"{self.name}:{key}", self.rate, self.burst)


class SharedFailureLimiter:
    """`FailureLimiter`'s take/refund (coroutines) over a SharedState: wrong sign-ins per browser address."""

    def __init__(self, shared: SharedState, name: str, limit: int = 10, window: float = 60.0):
        self.shared = shared
        self.name = name
        self.limit = limit
        self.window = window

    async def take(self, key: str) -> float:
        return await self.shared.take_failure(f"{self.name}:{key}", self.limit, self.window)

    async def refund(self, key: str) -> None:
        await self.shared.refund_failure(f"{self.name}:{key}", self.limit, self.window)
