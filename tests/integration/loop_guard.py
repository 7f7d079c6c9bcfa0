"""What a piece of async work did on the event loop's own thread that blocks the loop (issue 14; issue 45 made it
structural, where a ticker once measured how late the loop woke up and a bound on that flaked on a busy machine).

`blocking_on_loop(work)` runs `work` on the running loop with the blocking primitives wrapped: a blocking socket's
reads, writes and connects (a non-blocking one, as asyncio's own, is left alone), a synchronous httpx request (the
PocketBase client, Chroma's HTTP client), PocketBase's own request method, `time.sleep`, the embedding model and the
vector store, and any CPU-heavy function the caller names. Each call made on the loop's thread is written down;
the same calls from a worker thread (`asyncio.to_thread`, where they belong) are not. A handler that blocks the loop
makes one of these calls on it every time, however fast or slow the machine is; how long the loop is held is
measured in bench/ (bench_hostile.py, bench_load.py: the event-loop lag under load), never asserted in a test."""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable

import httpx

from r42_app.services.adapters.embeddings import QueryBatcher, SentenceEmbedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.store.pb import PocketBase

SOCKET_CALLS = ("recv", "recv_into", "recvfrom", "send", "sendall", "sendto", "connect", "accept")
BLOCKING = [
    *[(socket.socket, name, f"socket.{name}") for name in SOCKET_CALLS],
    (httpx.Client, "send", "httpx.Client.send"),
    (PocketBase, "send", "PocketBase.send"),
    (time, "sleep", "time.sleep"),
    (SentenceEmbedder, "encode", "the embedding model"),
    (QueryBatcher, "encode", "the embedding model (query batch)"),
    *[(VectorStore, name, f"VectorStore.{name}") for name in ("vectors", "keys", "write", "count", "stats")],
]


def _blocks(owner, args) -> bool:
    """A socket call blocks unless the socket is non-blocking (timeout 0.0, as the event loop's own sockets)."""
    if owner is socket.socket:
        with contextlib.suppress(OSError):
            return args[0].gettimeout() != 0.0
        return False
    return True


async def blocking_on_loop(work: Callable[[], Awaitable], cpu: Iterable[tuple[object, str]] = ()) -> list[str]:
    """Await `work()` and return what it called on this event loop's thread that blocks it, in order (an empty
    list: nothing). `cpu`: (module or class, function name) pairs of CPU-heavy work that belongs in a thread too."""
    loop_thread = threading.get_ident()
    seen: list[str] = []
    patched = []

    def wrap(owner, name: str, label: str):
        real = getattr(owner, name)

        @functools.wraps(real)
        def watched(*args, **kwargs):
            if threading.get_ident() == loop_thread and _blocks(owner, args):
                seen.append(" ".join([label, *(str(a) for a in args[1:3] if owner is PocketBase)]))
            return real(*args, **kwargs)

        patched.append((owner, name, real))
        setattr(owner, name, watched)

    try:
        for owner, name, label in BLOCKING:
            wrap(owner, name, label)
        for owner, name in cpu:
            wrap(owner, name, f"{getattr(owner, '__name__', owner)}.{name}")
        await work()
    finally:
        for owner, name, real in reversed(patched):
            setattr(owner, name, real)
    return seen
