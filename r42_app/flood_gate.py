"""ASGI middleware: one token's flood of `POST /api/chat` is refused before the application reads it.

The chat limit per user (core/ratelimit.py, `R42_CHAT_PER_MINUTE` and `R42_CHAT_BURST`) is taken in the turn's
guard, after the body is read and the token checked: every refused request of a flood still passed Starlette,
the token check and the guard, ~0.4 ms each, and a flood of 300 sent at once held another user's chat 2.5-7x
as long as a calm one (bench/bench_load.py), most when the flood's token had to be checked first (the 300 then
all went on together when that check returned).

This gate counts the requests of each Bearer token as they arrive, before anything is read or checked, on a
bucket twice the user's limit (burst and rate): a token past it is answered 429 without being read, with the
same body and Retry-After as the guard's refusal. Below it everything goes on to the guard, which keeps the real limit
(per user, shared by the workers, given back when a turn is refused for another reason). A token belongs to
one user, so the gate only refuses a token that sends more than twice what the guard would let through (the
headroom is for the turns the guard gives back). A token is counted whether or not it is valid (the gate reads
no store), and the gate remembers at most MAX_TOKENS of them, the least recently seen forgotten first.

A flood is sent all at once, so its first requests are through the gate before the ones that overflow it arrive.
Those are refused too: the gate marks each request it lets through (`ADMITTED` in the ASGI scope), and the chat
handler asks `flooded(scope)` before and after the guard; a token that overflowed the gate since its request came in
gets the same 429, and the guard's token back. A client that sends at most twice the user's burst at once never
meets this; one that sends more has that whole burst refused, and none of it costs a turn.

The refusals of a flood are held TARPIT_S (at random within it) before they are sent: their work then comes after
the other users' requests that arrived with them, not in one burst before them, and a flooding client waits
longer for each answer. A normal user never meets the gate.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from r42_app.core.messages import msg
from r42_app.core.ratelimit import RateLimiter
from r42_app.settings import load_settings

CHAT_PATH = "/api/chat"
HEADROOM = 2  # the gate's bucket: this many times the user's burst and rate
MAX_TOKENS = 20_000
TARPIT_S = (0.1, 0.3)  # a flood's refusals wait this long (at random between) before they are sent
ADMITTED = "r42.flood_gate"  # the scope key of a request the gate let through: (gate, token, when)


class FloodGate:
    def __init__(self, app: Any, per_minute: float, burst: int, limiter: RateLimiter | None = None,
                 tarpit: tuple[float, float] = TARPIT_S, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self.app = app
        self.limiter = limiter or RateLimiter(per_minute=HEADROOM * per_minute, burst=HEADROOM * burst,
                                              max_keys=MAX_TOKENS, clock=clock)
        self.tarpit = tarpit
        self.sleep = sleep
        self.clock = clock
        self.overflowed: OrderedDict[str, float] = OrderedDict()  # token -> when the gate last refused it
        self.body = json.dumps({"type": "rate_limited", "message": msg("chat.rate_limited")},
                               ensure_ascii=False).encode()

    def flooded_since(self, token: str, moment: float) -> bool:
        """Whether the gate refused `token` at or after `moment` (its own clock)."""
        refused = self.overflowed.get(token)
        return refused is not None and refused >= moment

    def retry_after(self, token: str) -> float:
        """Seconds until `token` is let through again."""
        return self.limiter.peek(token)

    def _refused(self, token: str, now: float) -> None:
        self.overflowed[token] = now
        self.overflowed.move_to_end(token)
        while len(self.overflowed) > MAX_TOKENS:
            self.overflowed.popitem(last=False)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != CHAT_PATH:
            await self.app(scope, receive, send)
            return
        token = b""
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                token = value[7:].strip() if value[:7].lower() == b"bearer " else b""
                break
        key = token.decode("latin-1")
        wait = self.limiter.check(key) if token else 0.0
        if wait <= 0:
            await self.app({**scope, ADMITTED: (self, key, self.clock())} if token else scope, receive, send)
            return
        self._refused(key, self.clock())
        if self.tarpit[1] > 0:
            await self.sleep(random.uniform(*self.tarpit))
        await send({"type": "http.response.start", "status": 429, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode()),
            (b"retry-after", str(max(1, math.ceil(wait))).encode())]})
        await send({"type": "http.response.body", "body": self.body})


def flood_gate(app: Any) -> Any:
    """The API transformer: `app` behind the gate, on this deployment's chat limit."""
    cfg = load_settings()
    return FloodGate(app, per_minute=cfg.chat_per_minute, burst=cfg.chat_burst)


def flooded(scope: MutableMapping[str, Any]) -> float | None:
    """For a chat request the gate let through: None while its token keeps to the gate's bucket; once the token
    overflowed it after this request came in (a flood sent at once), the seconds until it is let through again."""
    admitted = scope.get(ADMITTED)
    if not admitted:
        return None
    gate, token, at = admitted
    return max(1.0, gate.retry_after(token)) if gate.flooded_since(token, at) else None
