"""The Chroma collection `rag-kb-articles`: topic chunks with tenant, topic and chunk metadata.

Every read takes a tenant: results are filtered by it in Chroma *and* checked again on the
returned metadata, so a bug in a filter can never hand one tenant another tenant's text.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from r42_app.core.redact import redacted_url

log = logging.getLogger(__name__)

COLLECTION = "rag-kb-articles"
MAX_CHUNKS_PER_TOPIC = 16


_HELD: dict[str, object] = {}  # lock files this process holds on embedded indexes (kept open while it runs)


def _warn_if_shared(path: Path) -> bool:
    """The embedded Chroma client is single-process. Take a lock on the index; when another process already
    holds it, say so plainly (two writers corrupt the index): use a Chroma server instead. True if shared."""
    import fcntl

    key = str(path.resolve())
    if key in _HELD:
        return False
    handle = open(path / ".r42-open.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        log.warning("another process has the embedded Chroma index in %s open: the embedded client is "
                    "single-process, and two writers can corrupt it. Run a Chroma server (`r42 serve "
                    "--chroma-server`, or `chroma run`) and set CHROMA_URL for every process", path)
        return True
    _HELD[key] = handle
    return False


class VectorStoreUnavailable(RuntimeError):
    """Chroma cannot be opened or reached."""


class TenantLeak(RuntimeError):
    """Chroma returned a row of another tenant: never shown, always logged."""


@dataclass(frozen=True)
class ChunkVectors:
    slugs: list[str]
    chunks: list[int]
    texts: list[str]
    embeddings: np.ndarray


def chunk_id(tenant: str, slug: str, chunk: int) -> str:
    return f"{tenant}:{slug}:{chunk}"


_OPEN_LOCKS: dict[str, threading.Lock] = {}
_OPEN_LOCKS_GUARD = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    """One lock per store location: Chroma's client must not be opened by two threads at once."""
    with _OPEN_LOCKS_GUARD:
        return _OPEN_LOCKS.setdefault(key, threading.Lock())


class VectorStore:
    """Adapter over one Chroma collection; `tenant` is a required argument of every read.

    It recovers by itself: a failed call (a deleted or corrupt directory, a server gone) drops the
    client, and the next call opens it again, so a directory that was put back or rebuilt by a
    re-index is used without a restart."""

    SQLITE = "chroma.sqlite3"

    def __init__(self, path: Path | None = None, url: str = "", token: str = ""):
        self.path = path
        self.url = url
        self.token = token  # sent as a bearer token to a Chroma server that requires one (R42_CHROMA_TOKEN)
        self._collection = None
        self._key = url or str(path)

    def _open(self):
        collection = self._collection
        if collection is not None and not self.url and not (self.path / self.SQLITE).exists():
            log.warning("the Chroma directory %s is gone; opening it anew (run `r42 chatbot rag-backfill` to "
                        "rebuild the index)", self.path)
            self.reset()
            collection = None
        if collection is not None:
            return collection
        with _lock_for(self._key):
            if self._collection is not None:
                return self._collection
            try:
                import chromadb

                settings = chromadb.Settings(anonymized_telemetry=False)
                if self.url:
                    from urllib.parse import urlparse

                    parsed = urlparse(self.url)
                    headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
                    client = chromadb.HttpClient(host=parsed.hostname or "127.0.0.1", port=parsed.port or 8000,
                                                 ssl=parsed.scheme == "https", headers=headers, settings=settings)
                else:
                    assert self.path is not None
                    self.path.mkdir(parents=True, exist_ok=True)
                    _warn_if_shared(self.path)
                    client = chromadb.PersistentClient(path=str(self.path), settings=settings)
                # embedding_function=None: we always pass vectors; Chroma's default would download a model.
                self._collection = client.get_or_create_collection(
                    COLLECTION, embedding_function=None, metadata={"hnsw:space": "cosine"}
                )
            except Exception as exc:
                self._forget_system()
                where = redacted_url(self.url) if self.url else self.path
                raise VectorStoreUnavailable(f"Chroma is unavailable ({where}): {exc}") from exc
        return self._collection

    def reset(self) -> None:
        """Forget the open client (after a failure): the next call opens Chroma again."""
        with _lock_for(self._key):
            self._collection = None
            self._forget_system()

    def _forget_system(self) -> None:
        """Chroma keeps one system per directory for the whole process: drop ours so reopening reads the
        directory as it is now (deleted, rebuilt or restored)."""
        if self.url:
            return
        from chromadb.api.shared_system_client import SharedSystemClient

        system = SharedSystemClient._identifier_to_system.pop(str(self.path), None)
        SharedSystemClient._identifier_to_refcount.pop(str(self.path), None)
        if system is not None:
            with contextlib.suppress(Exception):
                system.stop()

    def _call(self, what: str, fn):
        """Run one Chroma call; any failure resets the client and is reported as VectorStoreUnavailable."""
        try:
            return fn(self._open())
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            self.reset()
            raise VectorStoreUnavailable(f"Chroma {what} failed: {exc}") from exc

    # -- writes (the indexer) --------------------------------------------------------

    def replace_topics(self, tenant: str, topics: Sequence[tuple[str, Sequence[str], np.ndarray]]) -> None:
        """Make each topic's chunks exactly its texts: upsert by deterministic id, then drop the ids
        beyond them. Idempotent, and one Chroma call of each kind for the whole batch."""
        if not tenant:
            raise ValueError("refusing to index a topic without a tenant")
        ids, embeddings, documents, metadatas, stale = [], [], [], [], []
        for slug, texts, vectors in topics:
            texts = list(texts)[:MAX_CHUNKS_PER_TOPIC]
            for i, text in enumerate(texts):
                ids.append(chunk_id(tenant, slug, i))
                documents.append(text)
                metadatas.append({"tenant": tenant, "topic": slug, "chunk": i})
            embeddings.extend(np.asarray(vectors, dtype=np.float32)[: len(texts)].tolist())
            stale += [chunk_id(tenant, slug, i) for i in range(len(texts), MAX_CHUNKS_PER_TOPIC)]
        def write(col):
            if ids:
                col.upsert(ids=ids, embeddings=embeddings, documents=documents, metadatas=metadatas)
            if stale:
                col.delete(ids=stale)

        self._call("write", write)

    def delete_topics(self, tenant: str, slugs: Sequence[str]) -> None:
        ids = [chunk_id(tenant, slug, i) for slug in slugs for i in range(MAX_CHUNKS_PER_TOPIC)]
        if ids:
            self._call("delete", lambda col: col.delete(ids=ids))

    # -- reads (always per tenant) ------------------------------------------------------

    def _checked(self, tenant: str, metadatas) -> None:
        for meta in metadatas:
            if (meta or {}).get("tenant") != tenant:
                log.error("Chroma returned a row of tenant %r for tenant %r", (meta or {}).get("tenant"), tenant)
                raise TenantLeak("cross-tenant row from the vector store")

    def topic_vectors(self, tenant: str, slugs: Sequence[str] | Mapping[str, int],
                      max_chunks: int = MAX_CHUNKS_PER_TOPIC) -> ChunkVectors:
        """The chunk vectors of the given topics of `tenant`: `{slug: number of chunks}` asks for exactly
        those (what the indexer wrote; Chroma can fail a whole lookup over ids it never had), a list of
        slugs for their first `max_chunks`.

        Fetched by id: chunk ids start with the tenant, so the id list is the tenant filter in the
        store (a `where` on top of an id list costs Chroma ~10x more), and metadata is checked again.
        """
        if not tenant:
            raise ValueError("tenant is required")
        if not slugs:
            return ChunkVectors([], [], [], np.zeros((0, 0), dtype=np.float32))
        counts = dict(slugs) if isinstance(slugs, Mapping) else {slug: max_chunks for slug in slugs}
        ids = [chunk_id(tenant, slug, i) for slug, n in counts.items() for i in range(min(n, MAX_CHUNKS_PER_TOPIC))]
        got = self._call("query", lambda col: col.get(ids=ids, include=["embeddings", "metadatas", "documents"]))
        metas = got["metadatas"] or []
        self._checked(tenant, metas)
        emb = got["embeddings"]
        return ChunkVectors(
            [m["topic"] for m in metas],
            [int(m["chunk"]) for m in metas],
            list(got["documents"] or []),
            np.asarray(emb if emb is not None else np.zeros((0, 0)), dtype=np.float32),
        )

    def nearest(self, tenant: str, embedding: np.ndarray, k: int) -> list[tuple[str, int, str, float]]:
        """Nearest chunks of `tenant` as (slug, chunk, text, cosine similarity)."""
        if not tenant:
            raise ValueError("tenant is required")
        res = self._call("query", lambda col: col.query(
            query_embeddings=[np.asarray(embedding, dtype=np.float32).tolist()], n_results=k,
            where={"tenant": tenant}, include=["metadatas", "documents", "distances"]))
        metas = (res["metadatas"] or [[]])[0]
        self._checked(tenant, metas)
        docs = (res["documents"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        return [(m["topic"], int(m["chunk"]), d, 1.0 - float(dist)) for m, d, dist in zip(metas, docs, dists)]

    def count(self, tenant: str) -> int:
        """Number of chunks stored for a tenant."""
        return len(self._call("count", lambda col: col.get(where={"tenant": tenant}, include=[]))["ids"])

    def chunk_ids(self, tenant: str) -> list[str]:
        return sorted(self._call("count", lambda col: col.get(where={"tenant": tenant}, include=[]))["ids"])
