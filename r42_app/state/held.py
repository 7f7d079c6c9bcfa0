"""Tasks that run past the event that started them (an import that outlives a reload of its page, the reading of
a chat turn): the event loop keeps only weak references to tasks, so each is held here till it is done."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

_HELD: set[asyncio.Future] = set()


def hold(work: Coroutine[Any, Any, Any]) -> asyncio.Future:
    """`work` run as a task of its own, held till it is done."""
    task = asyncio.ensure_future(work)
    _HELD.add(task)
    task.add_done_callback(_HELD.discard)
    return task
