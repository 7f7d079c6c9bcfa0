"""Warm before ready: each backend worker builds its Anthropic client (and runs the SDK's response path once,
in memory), loads the embedding model, the tenants' lexical indexes and their passage vectors at boot (a lifespan
task, r42_app.py `warm_up`), and /api/health says "warming" until it has.
`r42 serve` prints "R42 is running" only once health stops saying so, so the first question after it does not
wait 12-19 s behind "R42 zoekt in de kennisbank…" (bench/bench_first_answer.py measures that)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from r42_app.core.identity import Tenant
from r42_app.services.retrieval import MAX_CACHED_INDEXES
from r42_app.services.store.pb import pb_time

log = logging.getLogger(__name__)
WARM_QUERY = "overzicht van de kennisbank"  # any query with content words: it embeds and scores every passage


class Warmup:
    """This worker's warm-up: `state` is warming until `run` has finished (ready, also when a part failed: the
    first question then loads what is missing, as it did before)."""

    def __init__(self) -> None:
        self.state = "warming"
        self.seconds = 0.0
        self.tenants = 0
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def run(self, svc: Any, marker_dir: Path | None = None) -> None:
        """Build the chat's services and warm the model client, then search once in every tenant (the most recent
        MAX_CACHED_INDEXES): that loads the model, builds the index and reads the vectors into memory. Then, with
        `marker_dir`, leave a file named after this worker's pid there: `r42 serve` counts them, so with several
        workers it says "ready" once every one of them is warm (health answers for whichever worker it reaches)."""
        with self._lock:
            if self.ready:
                return
            start = time.monotonic()
            try:
                self._warm_model_client(svc)
                retriever = svc.retriever
                rows = svc.admin_pb.all("tenants", sort="-updated")[:MAX_CACHED_INDEXES]
                self._warm_turn_reads(svc, rows[0]["id"] if rows else "")
                for row in rows:
                    tenant = Tenant(row["id"], row["slug"], row["name"])
                    retriever.kb_search(tenant, WARM_QUERY, "hybrid", 5)
                    retriever.build_kb_context(tenant, WARM_QUERY)
                    if hasattr(retriever, "warm_markers"):
                        retriever.warm_markers(tenant)
                    self.tenants += 1
            except Exception as exc:  # noqa: BLE001 - serve anyway: the first question builds what is missing
                log.warning("warming the search index at boot failed (%s): the first question loads it", exc)
            freeze_heap()
            self.seconds = round(time.monotonic() - start, 1)
            self.state = "ready"
            log.info("warm in %.1f s (%d tenants)", self.seconds, self.tenants)
            if marker_dir is not None:
                try:
                    marker_dir.mkdir(parents=True, exist_ok=True)
                    (marker_dir / str(os.getpid())).write_text(f"{self.seconds}\n")
                except OSError as exc:  # serve then waits for its timeout and says so
                    log.warning("could not mark this worker warm in %s: %s", marker_dir, exc)

    @staticmethod
    def _warm_turn_reads(svc: Any, tenant_id: str) -> None:
        """The reads of a turn's start, once, for nobody: the token checks' connection, and the guard's one
        request (PocketBase's route compiled; a user that does not exist has no session, access or quiz; nothing
        is written)."""
        auth = getattr(svc, "auth", None)
        if auth is not None:
            auth.warm()
        access = getattr(svc, "access", None)
        if access is not None and tenant_id:
            try:
                found = access.turn_guards([(tenant_id, "warmupnobody00", pb_time(datetime.now(UTC)))])[0]
                if isinstance(found, Exception) and getattr(found, "status", 0) != 401:  # 401: nobody has no session
                    raise found
            except Exception as exc:  # noqa: BLE001 - the first question asks again, and says what is wrong
                log.warning("warming the turn's guard failed (%s)", exc)

    @staticmethod
    def _warm_model_client(svc: Any) -> None:
        """Build the chat's services (the one Anthropic client among them) and run the SDK's response path once
        in memory (`AnthropicLLM.warm`); offline there is no client to warm."""
        llm = svc.chat.llm
        warm = getattr(llm, "warm", None)
        if warm is not None:
            try:
                asyncio.run(warm())  # this runs in a worker thread (to_thread): no event loop of its own yet
            except Exception as exc:  # noqa: BLE001 - the first question then pays for it, as before
                log.warning("warming the model client failed (%s): the first question builds what it needs", exc)

    def summary(self) -> dict[str, Any]:
        return {"state": self.state, "seconds": self.seconds, "tenants": self.tenants}


def freeze_heap() -> None:
    """Move what the worker holds after its warm-up (the app, its pages and states, the model, the indexes: some
    590,000 objects) out of the garbage collector's sight (`gc.freeze`): a full collection then looks only at what
    was made since. Before, each full collection walked the whole heap and held the event loop 160-570 ms, several
    times a minute under load (bench/bench_load.py's flood: its outliers of 5-7x were those pauses); after, 110-230
    ms, over what the first turns import and cache. Objects made later are collected as before."""
    gc.collect()
    gc.freeze()


WARMUP = Warmup()
