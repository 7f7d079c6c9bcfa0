"""Calls from many concurrent turns in one blocking call, one thread hop and one request per batch (issue 26).

Under load every chat turn ran its guard read and its cost outbox row as a PocketBase request of its own, each in
a thread of the pool: fifty turns at once were fifty threads taking the GIL in turn for a few lines each, and
fifty requests for PocketBase to parse. `Batched.submit` queues a call on the event loop; if no batch is on its
way it starts one at once (a turn alone waits for nobody), and the calls that arrive while it is on its way go
together in the next. Each call is served by a batch that started after it was queued, so a read is as fresh
as a request of its own: a capability, credit or quiz change counts from the next question.

`run_batch(items)` runs in a worker thread and returns one result per item, in order: a value, or an exception
for that item alone. If it raises, every item of the batch gets that exception.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class _LoopQueue:
    def __init__(self) -> None:
        self.items: list[tuple[Any, asyncio.Future]] = []
        self.task: asyncio.Task | None = None


class Batched(Generic[T, R]):
    def __init__(self, run_batch: Callable[[list[T]], Sequence[R | BaseException]], max_batch: int = 100):
        self.run_batch = run_batch
        self.max_batch = max_batch
        self.batches = 0  # blocking calls made (the tests and the bench read it)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue] = weakref.WeakKeyDictionary()

    def submit(self, item: T) -> asyncio.Future:
        """Queue one call; the future holds its result. Call from the event loop."""
        loop = asyncio.get_running_loop()
        queue = self._loops.get(loop)
        if queue is None:
            queue = self._loops[loop] = _LoopQueue()
        done = loop.create_future()
        queue.items.append((item, done))
        if queue.task is None or queue.task.done():
            queue.task = loop.create_task(self._drain(queue))
        return done

    async def call(self, item: T) -> R:
        """Submit and wait. A caller that is cancelled leaves the batch to the others."""
        return await self.submit(item)

    async def _drain(self, queue: _LoopQueue) -> None:
        while queue.items:
            batch, queue.items = queue.items[:self.max_batch], queue.items[self.max_batch:]
            self.batches += 1
            try:
                results: Sequence[Any] = await asyncio.to_thread(self.run_batch, [item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"a batch of {len(batch)} calls gave {len(results)} results")
            except BaseException as exc:  # noqa: BLE001 - each caller gets the failure of its batch
                results = [exc] * len(batch)
                if isinstance(exc, asyncio.CancelledError):  # the loop is shutting down: nobody to serve
                    for _, done in batch + queue.items:
                        if not done.done():
                            done.cancel()
                    queue.items = []
                    raise
            for (_, done), result in zip(batch, results, strict=True):
                if done.done():  # its caller was cancelled
                    continue
                if isinstance(result, BaseException):
                    done.set_exception(result)
                else:
                    done.set_result(result)
