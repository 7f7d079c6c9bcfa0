"""ASGI middleware: one token's flood of `POST /api/chat` is refused before the application reads it.

The chat limit per user (core/ratelimit.py, `R42_CHAT_PER_MINUTE` and `R42_CHAT_BURST`) is taken in the turn's
guard, after the body is read and the token checked: every refused request of a flood still passed Starlette,
the token check and the guard, ~0.4 ms each, and a flood of 300 sent at once held another user's chat 2.5-7x
as long as a calm one (bench/bench_load.py), most when the flood's token had to be checked first (the 300 then
all went on together when that check returned).

This gate counts the requests of each Bearer token as they arrive, before anything is read or checked, on a
bucket twice the user's limit (burst and rate): a token past it is answered 429 at once, with the same body
and Retry-After as the guard's refusal. Below it everything goes on to the guard, which keeps the real limit
(per user, shared by the workers, given back when a turn is refused for another reason). A token belongs to
one user, so the gate only refuses a token that sends more than twice what the guard would let through (the
headroom is for the turns the guard gives back). A token is counted whether or not it is valid (the gate reads
no store), and the gate remembers at most MAX_TOKENS of them, the least recently seen forgotten first.

Behind the gate, a user's turns that do pass (the first of a flood, within the burst) are grounded one at a time
(chat/turn.py, `one_user_at_a_time`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from r42_app.core.messages import msg
from r42_app.core.ratelimit import RateLimiter
from r42_app.settings import load_settings

CHAT_PATH = "/api/chat"
HEADROOM = 2  # the gate's bucket: this many times the user's burst and rate
MAX_TOKENS = 20_000


class FloodGate:
    def __init__(self, app: Any, per_minute: float, burst: int, limiter: RateLimiter | None = None):
        self.app = app
        self.limiter = limiter or RateLimiter(per_minute=HEADROOM * per_minute, burst=HEADROOM * burst,
                                              max_keys=MAX_TOKENS)
        self.body = json.dumps({"type": "rate_limited", "message": msg("chat.rate_limited")},
                               ensure_ascii=False).encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != CHAT_PATH:
            await self.app(scope, receive, send)
            return
        token = b""
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                token = value[7:].strip() if value[:7].lower() == b"bearer " else b""
                break
        wait = self.limiter.check(token.decode("latin-1")) if token else 0.0
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 429, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode()),
            (b"retry-after", str(max(1, math.ceil(wait))).encode())]})
        await send({"type": "http.response.body", "body": self.body})


def flood_gate(app: Any) -> Any:
    """The API transformer: `app` behind the gate, on this deployment's chat limit."""
    cfg = load_settings()
    return FloodGate(app, per_minute=cfg.chat_per_minute, burst=cfg.chat_burst)
