"""Batched calls (issue 26, services/store/batched.py): calls that arrive while a batch is on its way go together
in the next one, a call alone is not held back, each caller gets its own result or failure, and a caller that
gives up leaves the others their answers."""

import asyncio
import threading

import pytest

from r42_app.services.store.batched import Batched

pytestmark = pytest.mark.anyio


class Recorder:
    def __init__(self, fail_on=None, gate=None):
        self.batches: list[list] = []
        self.fail_on = fail_on
        self.gate = gate

    def __call__(self, items):
        self.batches.append(list(items))
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail_on == "all":
            raise RuntimeError("server down")
        return [ValueError(f"bad {i}") if i == self.fail_on else i * 10 for i in items]


async def test_a_call_alone_goes_at_once_and_calls_arriving_meanwhile_share_the_next_batch():
    gate = threading.Event()
    run = Recorder(gate=gate)
    batched = Batched(run)
    first = batched.submit(0)
    await asyncio.sleep(0.05)  # the first batch is on its way (held by the gate)
    rest = [batched.submit(i) for i in range(1, 8)]
    gate.set()
    assert await first == 0 and [await r for r in rest] == [i * 10 for i in range(1, 8)]
    assert run.batches == [[0], list(range(1, 8))]


async def test_each_caller_gets_its_own_failure_and_a_failed_batch_fails_all_of_its_callers():
    batched = Batched(Recorder(fail_on=3))
    results = await asyncio.gather(*(batched.call(i) for i in range(6)), return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["int", "int", "int", "ValueError", "int", "int"]
    down = Batched(Recorder(fail_on="all"))
    results = await asyncio.gather(*(down.call(i) for i in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) and "server down" in str(r) for r in results)


async def test_a_cancelled_caller_leaves_the_batch_to_the_others():
    gate = threading.Event()
    batched = Batched(Recorder(gate=gate))
    gone, kept = asyncio.ensure_future(batched.call(1)), asyncio.ensure_future(batched.call(2))
    await asyncio.sleep(0.05)
    gone.cancel()
    gate.set()
    assert await kept == 20
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_batches_are_capped():
    run = Recorder()
    batched = Batched(run, max_batch=4)
    assert await asyncio.gather(*(batched.call(i) for i in range(10))) == [i * 10 for i in range(10)]
    assert max(len(b) for b in run.batches) == 4 and sum(len(b) for b in run.batches) == 10
