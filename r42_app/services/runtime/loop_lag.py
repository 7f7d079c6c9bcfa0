"""How late the backend's event loop wakes up: a task that sleeps 100 ms at a time and records by how
much each sleep overran. One slow, blocking call shows here as lag for every user of the process."""

from __future__ import annotations

import asyncio
import time
from collections import deque

INTERVAL_S = 0.1
SAMPLES = 600  # the last minute


class LoopLag:
    def __init__(self) -> None:
        self.samples: deque[float] = deque(maxlen=SAMPLES)

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(INTERVAL_S)
            self.samples.append(max(0.0, time.perf_counter() - started - INTERVAL_S))

    def summary(self) -> dict[str, float]:
        """p50, p99 and max lag in ms over the last minute."""
        ordered = sorted(self.samples)
        if not ordered:
            return {"p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}

        def pct(p: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 1)

        return {"p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": round(ordered[-1] * 1000, 1)}


MONITOR = LoopLag()
