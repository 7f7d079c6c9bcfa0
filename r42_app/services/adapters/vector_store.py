"""Passage vectors in Chroma: one collection per tenant and embedding model.

Chroma is the durable store; search itself runs exactly over the vectors in memory (services/retrieval.py),
so Chroma's HNSW index is written but never needed for an answer. How it is used keeps it sane:

- **One writer per embedded store.** The embedded client is single-process, and two processes writing one
  directory corrupt its segments and grow `link_lists.bin` without bound (the disk filled at 74 GB). A
  process must hold the store's lock to write (`IndexBusy` otherwise): the app holds it while it runs, and
  the CLI then hands indexing to the app through the outbox. A Chroma server (CHROMA_URL) takes any number
  of writers.
- **Only changed passages are written.** Passage ids are stable (core/passages.py): the indexer adds the
  new ones and deletes the stale ones; an unchanged passage is never written again (no upserts).
- **Compaction.** Chroma's HNSW never reuses the slot of a deleted vector, so churn grows the segment
  (data_level0.bin has a slot for every vector ever added). Each collection counts what was ever written; once
  that passes COMPACT_RATIO times what is live, the collection is rebuilt from its live vectors.
- **No documents.** Only vectors and their topic go in: the text lives in PocketBase and the lexical index.

Every read takes a tenant; returned metadata is checked against it, so a bug can never hand one tenant
another tenant's vectors. A failed call drops the client and the next opens it anew (a directory that was
deleted or restored is picked up without a restart).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from r42_app.core.redact import redacted_url

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

log = logging.getLogger(__name__)

PREFIX = "r42-kb"
LEGACY = "rag-kb-articles"
# Measured on 50,000 passages (docs/BENCHMARKS.md): larger batches mean fewer resize-and-persist rounds. The graph
# answers the questions of a tenant too big for a worker's memory (issue 50: Retriever.by_engine), so it is built
# as Chroma builds it by default, M 16 and construction ef 100: at 1,000,000 vectors the cheaper M 8 / ef 32 found
# only a quarter of the exact top 10 (bench vector-engine). It costs ~0.3 ms of CPU per vector added, against
# 66-145 ms to embed the passage. Collections made before keep their graph until rebuilt (compaction, or
# `r42 chatbot rag-backfill --rebuild`).
HNSW = {"hnsw:space": "cosine", "hnsw:batch_size": 1000, "hnsw:sync_threshold": 10000, "hnsw:M": 16,
        "hnsw:construction_ef": 100}
COMPACT_RATIO = 1.5  # rebuild once ever-written vectors exceed live ones by half ...
COMPACT_MIN = 2000  # ... and by at least this many
WRITE_BATCH = 4000  # Chroma refuses batches above ~5,400 rows
READ_PAGE = 5000
WRITTEN = "r42:written"
MODEL = "r42:model"


class VectorStoreUnavailable(RuntimeError):
    """Chroma cannot be opened or reached."""


class IndexBusy(VectorStoreUnavailable):
    """Another process writes this embedded store: this one may not (see the module docstring)."""


class TenantLeak(RuntimeError):
    """Chroma returned a row of another tenant: never shown, always logged."""


def collection_name(tenant: str, model_id: str) -> str:
    return f"{PREFIX}-{tenant}-{hashlib.sha1(model_id.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class StoredVectors:
    keys: list[str]
    slugs: list[str]
    vectors: np.ndarray


_HELD: dict[str, object] = {}  # lock files this process holds on embedded stores (kept open while it runs)
_OPEN_LOCKS: dict[str, threading.Lock] = {}
_OPEN_LOCKS_GUARD = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    """One lock per store location: Chroma's client must not be opened by two threads at once."""
    with _OPEN_LOCKS_GUARD:
        return _OPEN_LOCKS.setdefault(key, threading.Lock())


def writer_lock(path: Path) -> bool:
    """Take (or hold) the single-writer lock of an embedded store; False when another process has it."""
    key = str(path.resolve())
    if key in _HELD:
        return True
    path.mkdir(parents=True, exist_ok=True)
    handle = open(path / ".r42-writer.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    _HELD[key] = handle
    return True


def held_elsewhere(path: Path) -> bool:
    """Another process writes the embedded store at `path` (this one does not hold its lock)."""
    if str(path.resolve()) in _HELD or not path.exists():
        return False
    lock = path / ".r42-writer.lock"
    if not lock.exists():
        return False
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


class VectorStore:
    """Adapter over Chroma; `tenant` is a required argument of every call."""

    SQLITE = "chroma.sqlite3"

    def __init__(self, path: Path | None = None, url: str = "", token: str = "", model_id: str = ""):
        self.path = path
        self.url = url
        self.token = token  # sent as a bearer token to a Chroma server that requires one (R42_CHROMA_TOKEN)
        self.model_id = model_id
        self._client: ClientAPI | None = None
        self._collections: dict[str, object] = {}
        self._key = url or str(path)

    # -- connection -------------------------------------------------------------------------

    def _open(self):
        if (self._client is not None and not self.url and self.path is not None
                and not (self.path / self.SQLITE).exists()):
            log.warning("the Chroma directory %s is gone; opening it anew (run `r42 chatbot rag-backfill` to "
                        "rebuild the index)", self.path)
            self.reset()
        if self._client is not None:
            return self._client
        with _lock_for(self._key):
            if self._client is not None:
                return self._client
            try:
                import chromadb

                settings = chromadb.Settings(anonymized_telemetry=False)
                if self.url:
                    from urllib.parse import urlparse

                    parsed = urlparse(self.url)
                    headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
                    self._client = chromadb.HttpClient(host=parsed.hostname or "127.0.0.1", port=parsed.port or 8000,
                                                       ssl=parsed.scheme == "https", headers=headers, settings=settings)
                else:
                    assert self.path is not None
                    self.path.mkdir(parents=True, exist_ok=True)
                    self._client = chromadb.PersistentClient(path=str(self.path), settings=settings)
            except Exception as exc:
                self._forget_system()
                where = redacted_url(self.url) if self.url else self.path
                raise VectorStoreUnavailable(f"Chroma is unavailable ({where}): {exc}") from exc
        return self._client

    def _collection(self, tenant: str, create: bool):
        name = collection_name(tenant, self.model_id)
        client = self._open()  # first: it notices a directory that was deleted under it
        col = self._collections.get(name)
        if col is not None:
            return col
        if create:
            # embedding_function=None: we always pass vectors; Chroma's default would download a model.
            col = client.get_or_create_collection(name, embedding_function=None,
                                                  metadata={**HNSW, MODEL: self.model_id, "tenant": tenant})
        else:
            try:
                col = client.get_collection(name, embedding_function=None)
            except Exception as exc:  # not found (its type differs between clients): nothing stored yet
                if "does not exist" in str(exc) or "not found" in str(exc).lower():
                    return None
                raise
        self._collections[name] = col
        return col

    def reset(self) -> None:
        """Forget the open client (after a failure): the next call opens Chroma again."""
        with _lock_for(self._key):
            self._client = None
            self._collections.clear()
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
            return fn()
        except (VectorStoreUnavailable, TenantLeak):
            raise
        except Exception as exc:
            self.reset()
            raise VectorStoreUnavailable(f"Chroma {what} failed: {exc}") from exc

    def can_write(self) -> bool:
        """This process may write (a server, or the embedded store's lock is ours or free)."""
        return bool(self.url) or (self.path is not None and writer_lock(self.path))

    def _require_writer(self) -> None:
        if not self.can_write():
            raise IndexBusy(f"another process (the app, `r42 serve`?) writes the embedded index in {self.path}; "
                            "it indexes through the outbox, or run a Chroma server (CHROMA_URL) for several writers")

    # -- writes (the indexer) ---------------------------------------------------------------

    def keys(self, tenant: str, slugs: Iterable[str] | None = None) -> dict[str, str]:
        """The stored passage keys of a tenant (of these topics only, if given) -> their topic."""
        _need(tenant)

        def read() -> dict[str, str]:
            col = self._collection(tenant, create=False)
            if col is None:
                return {}
            wanted = None if slugs is None else sorted(set(slugs))
            if wanted == []:
                return {}
            where = None if wanted is None else {"topic": {"$in": wanted}}
            out: dict[str, str] = {}
            for offset in range(0, 10**9, READ_PAGE):
                got = col.get(where=where, include=["metadatas"], limit=READ_PAGE, offset=offset)
                metas = got["metadatas"] or []
                self._checked(tenant, metas)
                out.update((_key(i), m["topic"]) for i, m in zip(got["ids"], metas))
                if len(got["ids"]) < READ_PAGE:
                    return out
            return out

        return self._call("read", read)

    def write(self, tenant: str, add: Sequence[tuple[str, str, np.ndarray]], delete: Sequence[str] = ()) -> None:
        """Add these (key, topic, vector) and delete these keys; then compact when churn calls for it."""
        _need(tenant)
        if not add and not delete:
            return
        self._require_writer()

        def run() -> None:
            col = self._collection(tenant, create=True)
            # Add before deleting: HNSW keeps deleted vectors in its graph, and adding into a graph that is mostly
            # deleted is 10-15x slower (20,000 vectors after deleting 20,000: 110 s instead of 8 s).
            for start in range(0, len(add), WRITE_BATCH):
                part = add[start:start + WRITE_BATCH]
                col.add(ids=[_id(tenant, k) for k, _, _ in part],
                        embeddings=np.asarray([v for _, _, v in part], dtype=np.float32),
                        metadatas=[{"tenant": tenant, "topic": slug} for _, slug, _ in part])
            if delete:
                for start in range(0, len(delete), WRITE_BATCH):
                    col.delete(ids=[_id(tenant, k) for k in delete[start:start + WRITE_BATCH]])
            written = int((col.metadata or {}).get(WRITTEN, 0)) + len(add)
            live = col.count()
            if written > COMPACT_RATIO * live + COMPACT_MIN:
                self._compact(tenant, col)
            else:
                col.modify(metadata={**_user_metadata(col), WRITTEN: written})

        self._call("write", run)

    def delete_topics(self, tenant: str, slugs: Sequence[str]) -> None:
        stored = self.keys(tenant, slugs)
        self.write(tenant, [], list(stored))

    def _compact(self, tenant: str, col) -> None:
        """Rebuild a collection from its live vectors (Chroma never reuses a deleted vector's slot)."""
        live = self._read_vectors(tenant, col, None)
        client = self._open()
        name = col.name
        temp = f"{name}-compacting"
        with contextlib.suppress(Exception):
            client.delete_collection(temp)
        fresh = client.create_collection(temp, embedding_function=None,
                                         metadata={**HNSW, MODEL: self.model_id, "tenant": tenant,
                                                   WRITTEN: len(live.keys)})
        for start in range(0, len(live.keys), WRITE_BATCH):
            fresh.add(ids=[_id(tenant, k) for k in live.keys[start:start + WRITE_BATCH]],
                      embeddings=live.vectors[start:start + WRITE_BATCH],
                      metadatas=[{"tenant": tenant, "topic": s} for s in live.slugs[start:start + WRITE_BATCH]])
        client.delete_collection(name)
        fresh.modify(name=name)
        self._collections.pop(name, None)
        self._remove_orphans()
        log.info("compacted the index of tenant %s: %d live vectors", tenant, len(live.keys))

    def drop(self, tenant: str, model_id: str | None = None) -> None:
        """Delete a tenant's collection (of another model, when `model_id` is given)."""
        _need(tenant)
        self._require_writer()
        name = collection_name(tenant, self.model_id if model_id is None else model_id)

        def run() -> None:
            with contextlib.suppress(Exception):
                self._open().delete_collection(name)
            self._collections.pop(name, None)
            self._remove_orphans()

        self._call("drop", run)

    # -- reads (always per tenant) ----------------------------------------------------------

    def _checked(self, tenant: str, metadatas) -> None:
        for meta in metadatas:
            if (meta or {}).get("tenant") != tenant:
                log.error("Chroma returned a row of tenant %r for tenant %r", (meta or {}).get("tenant"), tenant)
                raise TenantLeak("cross-tenant row from the vector store")

    def _read_vectors(self, tenant: str, col, keys: Sequence[str] | None) -> StoredVectors:
        out_keys, slugs, parts = [], [], []
        if keys is not None:
            pages = [list(keys[s:s + READ_PAGE]) for s in range(0, len(keys), READ_PAGE)]
        else:
            pages = None
        offset = 0
        while True:
            if pages is not None:
                if not pages:
                    break
                got = col.get(ids=[_id(tenant, k) for k in pages.pop(0)], include=["embeddings", "metadatas"])
            else:
                got = col.get(include=["embeddings", "metadatas"], limit=READ_PAGE, offset=offset)
                offset += READ_PAGE
            metas = got["metadatas"] or []
            self._checked(tenant, metas)
            emb = got["embeddings"]
            if len(got["ids"]):
                out_keys += [_key(i) for i in got["ids"]]
                slugs += [m["topic"] for m in metas]
                parts.append(np.asarray(emb, dtype=np.float32))
            if pages is None and len(got["ids"]) < READ_PAGE:
                break
        matrix = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        return StoredVectors(out_keys, slugs, matrix)

    def vectors(self, tenant: str, keys: Sequence[str] | None = None) -> StoredVectors:
        """The stored vectors of a tenant: all of them, or those of these keys that exist."""
        _need(tenant)

        def read() -> StoredVectors:
            col = self._collection(tenant, create=False)
            if col is None or (keys is not None and not keys):
                return StoredVectors([], [], np.zeros((0, 0), dtype=np.float32))
            return self._read_vectors(tenant, col, keys)

        return self._call("read", read)

    def nearest(self, tenant: str, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
        """The `n` passages of a tenant nearest to `vector`, searched by Chroma itself (its HNSW graph, on the
        Chroma server when there is one): (key, cosine similarity), nearest first. For a tenant too big to hold
        in a worker's memory (issue 50); approximate, its recall against exact search is measured in
        bench/bench_vector_engine.py. Every row is checked to be the tenant's."""
        _need(tenant)

        def read() -> list[tuple[str, float]]:
            col = self._collection(tenant, create=False)
            if col is None or n < 1:
                return []
            got = col.query(query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()], n_results=n,
                            include=["distances", "metadatas"])
            metas = (got.get("metadatas") or [[]])[0]
            self._checked(tenant, metas)
            ids, distances = (got.get("ids") or [[]])[0], (got.get("distances") or [[]])[0]
            return [(_key(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]  # cosine distance

        return self._call("query", read)

    def count(self, tenant: str) -> int:
        """Number of passage vectors stored for a tenant."""
        _need(tenant)

        def read() -> int:
            col = self._collection(tenant, create=False)
            return 0 if col is None else col.count()

        return self._call("count", read)

    def stats(self, tenant: str) -> dict:
        """What `r42 doctor` reports: live vectors, vectors ever written since the last compaction, model."""
        _need(tenant)

        def read() -> dict:
            col = self._collection(tenant, create=False)
            if col is None:
                return {"vectors": 0, "written": 0, "model": self.model_id}
            meta = col.metadata or {}
            return {"vectors": col.count(), "written": int(meta.get(WRITTEN, 0)), "model": meta.get(MODEL, "")}

        return self._call("stats", read)

    def other_models(self, tenant: str) -> list[str]:
        """Collections of this tenant written by another embedding model (left over after a model change)."""
        _need(tenant)
        mine = collection_name(tenant, self.model_id)

        def read() -> list[str]:
            names = [getattr(c, "name", c) for c in self._open().list_collections()]
            return [n for n in names if n.startswith(f"{PREFIX}-{tenant}-") and n != mine
                    and not n.endswith("-compacting")]

        return self._call("list", read)

    def drop_collection(self, name: str) -> None:
        self._require_writer()

        def run() -> None:
            self._open().delete_collection(name)
            self._collections.pop(name, None)
            self._remove_orphans()

        self._call("drop", run)

    def drop_legacy(self) -> None:
        """Drop the single collection of R42 before passages (`rag-kb-articles`, first chunks only)."""
        self._require_writer()

        def run() -> None:
            client = self._open()
            if LEGACY in [getattr(c, "name", c) for c in client.list_collections()]:
                client.delete_collection(LEGACY)
                self._remove_orphans()
                log.info("dropped %s, the index from before passages", LEGACY)

        self._call("drop", run)

    # -- the embedded store on disk ---------------------------------------------------------

    def _segment_dirs(self) -> dict[str, str]:
        """Collection name -> the directory of its vector segment (an embedded store; read from Chroma's own
        catalogue, read-only: an internal table, so any surprise means "unknown")."""
        if self.url or self.path is None or not (self.path / self.SQLITE).exists():
            return {}
        import sqlite3

        try:
            with contextlib.closing(sqlite3.connect(f"file:{self.path / self.SQLITE}?mode=ro", uri=True,
                                                    timeout=5)) as db:
                rows = db.execute("SELECT c.name, s.id FROM segments s JOIN collections c ON s.collection = c.id "
                                  "WHERE s.scope = 'VECTOR'").fetchall()
        except sqlite3.Error:
            return {}
        return dict(rows)

    def _remove_orphans(self) -> None:
        """Chroma leaves a deleted collection's segment directory on disk: remove the ones nothing refers to."""
        if self.url or self.path is None:
            return
        known = set(self._segment_dirs().values())
        if not known:
            return
        import shutil

        for entry in self.path.iterdir():
            if entry.is_dir() and _UUID.fullmatch(entry.name) and entry.name not in known:
                shutil.rmtree(entry, ignore_errors=True)

    def segment_bytes(self, tenant: str) -> int:
        """Bytes on disk of a tenant's vector segment (0 for a server or when unknown)."""
        segment = self._segment_dirs().get(collection_name(tenant, self.model_id))
        if not segment or self.path is None or not (self.path / segment).is_dir():
            return 0
        return sum(f.stat().st_size for f in (self.path / segment).iterdir() if f.is_file())

    def size_bytes(self) -> int:
        """Bytes on disk of an embedded store (0 for a server)."""
        if self.url or self.path is None or not self.path.exists():
            return 0
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _need(tenant: str) -> None:
    if not tenant:
        raise ValueError("tenant is required")


def _id(tenant: str, key: str) -> str:
    return f"{tenant}:{key}"


def _key(chroma_id: str) -> str:
    return chroma_id.split(":", 1)[1]


def _user_metadata(col) -> dict:
    """The collection's metadata without the HNSW keys (Chroma refuses to modify those)."""
    return {k: v for k, v in (col.metadata or {}).items() if not k.startswith("hnsw:")}
