"""Text in chunks, not a token at a time (issue 26): the model's text pieces are merged so that one goes out at
most every INTERVAL_S, and no piece waits longer than that. The first piece goes at once (the learner sees R42
start writing), anything that is not text (a tool call, the round's usage, its end) goes at once too, after
the text before it. Each text event costs a serialised SSE event (the API) or a state delta to the browser
(the window), so a fast model's 18 pieces become one to three events."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from r42_app.services.adapters.llm import LLMEvent

INTERVAL_S = 0.03


async def coalesce_text(source: AsyncIterator[LLMEvent], interval: float = INTERVAL_S) -> AsyncIterator[LLMEvent]:
    """`source`'s events with consecutive text pieces merged (see the module docstring). Closing this
    generator closes `source` (the user stopped the answer: the model's stream is cut, not read on)."""
    it = source.__aiter__()
    loop = asyncio.get_running_loop()
    buffer, flushed_at = "", -interval  # the first piece goes at once
    pending: asyncio.Future | None = None  # the next event, asked for while text waited to be flushed
    try:
        while True:
            if buffer:
                if pending is None:
                    pending = asyncio.ensure_future(it.__anext__())
                done, _ = await asyncio.wait({pending}, timeout=max(0.0, flushed_at + interval - loop.time()))
                if not done:  # the model is slower than the interval: what has come goes now
                    yield LLMEvent("text", text=buffer)
                    buffer, flushed_at = "", loop.time()
                    continue
            try:
                if pending is not None:  # asked for already (maybe not come yet: the text before it went out)
                    next_event, pending = pending, None
                    event = await next_event
                else:
                    event = await it.__anext__()
            except StopAsyncIteration:
                break
            except Exception:  # the model's stream broke off: what came before the break is still the answer's
                if buffer:
                    yield LLMEvent("text", text=buffer)
                    buffer = ""
                raise
            if event.kind == "text":
                buffer += event.text
                if loop.time() - flushed_at >= interval:
                    yield LLMEvent("text", text=buffer)
                    buffer, flushed_at = "", loop.time()
                continue
            if buffer:
                yield LLMEvent("text", text=buffer)
                buffer, flushed_at = "", loop.time()
            yield event
        if buffer:
            yield LLMEvent("text", text=buffer)
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            await aclose()
