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


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


_END = object()


async def _pump(it: AsyncIterator[LLMEvent], queue: asyncio.Queue) -> None:
    """Read the model's events as they come into `queue`, then _END (or the failure)."""
    try:
        async for event in it:
            queue.put_nowait(event)
    except Exception as exc:  # noqa: BLE001 - handed to the reader, after the text that came before it
        queue.put_nowait(_Failed(exc))
        return
    queue.put_nowait(_END)


async def coalesce_text(source: AsyncIterator[LLMEvent], interval: float = INTERVAL_S) -> AsyncIterator[LLMEvent]:
    """`source`'s events with consecutive text pieces merged (see the module docstring). Closing this
    generator closes `source` (the user stopped the answer: the model's stream is cut, not read on).

    The model's events are read by a task of their own into a queue, so the pieces that have come are taken
    without waiting, and only an empty queue with text held back waits, at most until that text is due. (The
    previous version wrapped every next event in a task and an `asyncio.wait`: ~6% of the worker's Python time
    under load, issue 26.)"""
    it = source.__aiter__()
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    pump = asyncio.ensure_future(_pump(it, queue))
    buffer, flushed_at = "", -interval  # the first piece goes at once
    try:
        while True:
            if buffer and queue.empty():
                due = flushed_at + interval - loop.time()
                try:
                    if due <= 0:
                        raise TimeoutError
                    async with asyncio.timeout(due):
                        item = await queue.get()
                except TimeoutError:  # the model is slower than the interval: what has come goes now
                    yield LLMEvent("text", text=buffer)
                    buffer, flushed_at = "", loop.time()
                    continue
            else:
                item = queue.get_nowait() if not queue.empty() else await queue.get()
            if item is _END:
                break
            if isinstance(item, _Failed):  # the model's stream broke off: what came before is still the answer's
                if buffer:
                    yield LLMEvent("text", text=buffer)
                    buffer = ""
                raise item.error
            if item.kind == "text":
                buffer += item.text
                if loop.time() - flushed_at >= interval:
                    yield LLMEvent("text", text=buffer)
                    buffer, flushed_at = "", loop.time()
                continue
            if buffer:
                yield LLMEvent("text", text=buffer)
                buffer, flushed_at = "", loop.time()
            yield item
        if buffer:
            yield LLMEvent("text", text=buffer)
    finally:
        if not pump.done():
            pump.cancel()
        with contextlib.suppress(BaseException):
            await pump
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            await aclose()
