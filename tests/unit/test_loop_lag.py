"""The event-loop lag monitor behind /api/health: a blocking call on the loop shows up as lag."""

import asyncio
import time

from r42_app.services.runtime.loop_lag import LoopLag


def test_a_blocking_call_on_the_loop_shows_as_lag():
    monitor = LoopLag()

    async def main() -> None:
        task = asyncio.create_task(monitor.run())
        await asyncio.sleep(0.35)
        time.sleep(0.3)  # what a synchronous PocketBase call in an event handler does to everyone
        await asyncio.sleep(0.25)
        task.cancel()

    asyncio.run(main())
    summary = monitor.summary()
    assert summary["max_ms"] >= 200, summary
    assert summary["p50_ms"] < summary["max_ms"]


def test_no_samples_reads_as_zero_lag():
    assert LoopLag().summary() == {"p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
