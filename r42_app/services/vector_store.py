"""The Chroma collection `rag-kb-articles`: topic chunks with tenant, topic and chunk metadata.

Every read takes a tenant: results are filtered by it in Chroma *and* checked again on the
returned metadata, so a bug in a filter can never hand one tenant another tenant's text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

log = logging.getLogger(__name__)

COLLECTION = "rag-kb-articles"
MAX_CHUNKS_PER_TOPIC = 16


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


class VectorStore:
    """Adapter over one Chroma collection; `tenant` is a required argument of every read."""

    def __init__(self, path: Path | None = None, url: str = ""):
        self.path = path
        self.url = url
        self._collection = None

    def _open(self):
        if self._collection is not None:
            return self._collection
        try:
            import chromadb

            settings = chromadb.Settings(anonymized_telemetry=False)
            if self.url:
                from urllib.parse import urlparse

                parsed = urlparse(self.url)
                client = chromadb.HttpClient(host=parsed.hostname or "127.0.0.1", port=parsed.port or 8000,
                                             ssl=parsed.scheme == "https", settings=settings)
            else:
                assert self.path is not None
                self.path.mkdir(parents=True, exist_ok=True)
                client = chromadb.PersistentClient(path=str(self.path), settings=settings)
            # embedding_function=None: we always pass vectors; Chroma's default would download a model.
            self._collection = client.get_or_create_collection(
                COLLECTION, embedding_function=None, metadata={"hnsw:space": "cosine"}
            )
        except Exception as exc:
            raise VectorStoreUnavailable(f"Chroma is unavailable ({self.url or self.path}): {exc}") from exc
        return self._collection

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
        col = self._open()
        if ids:
            col.upsert(ids=ids, embeddings=embeddings, documents=documents, metadatas=metadatas)
        if stale:
            col.delete(ids=stale)

    def delete_topics(self, tenant: str, slugs: Sequence[str]) -> None:
        ids = [chunk_id(tenant, slug, i) for slug in slugs for i in range(MAX_CHUNKS_PER_TOPIC)]
        if ids:
            self._open().delete(ids=ids)

    # -- reads (always per tenant) ------------------------------------------------------

    def _checked(self, tenant: str, metadatas) -> None:
        for meta in metadatas:
            if (meta or {}).get("tenant") != tenant:
                log.error("Chroma returned a row of tenant %r for tenant %r", (meta or {}).get("tenant"), tenant)
                raise TenantLeak("cross-tenant row from the vector store")

    def topic_vectors(self, tenant: str, slugs: Sequence[str], max_chunks: int = MAX_CHUNKS_PER_TOPIC) -> ChunkVectors:
        """The chunk vectors of the given topics of `tenant` (their first `max_chunks` chunks).

        Fetched by id: chunk ids start with the tenant, so the id list is the tenant filter in the
        store (a `where` on top of an id list costs Chroma ~10x more), and metadata is checked again.
        """
        if not tenant:
            raise ValueError("tenant is required")
        if not slugs:
            return ChunkVectors([], [], [], np.zeros((0, 0), dtype=np.float32))
        try:
            got = self._open().get(
                ids=[chunk_id(tenant, slug, i) for slug in slugs for i in range(max_chunks)],
                include=["embeddings", "metadatas", "documents"],
            )
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            raise VectorStoreUnavailable(f"Chroma query failed: {exc}") from exc
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
        col = self._open()
        try:
            res = col.query(
                query_embeddings=[np.asarray(embedding, dtype=np.float32).tolist()],
                n_results=k,
                where={"tenant": tenant},
                include=["metadatas", "documents", "distances"],
            )
        except Exception as exc:
            raise VectorStoreUnavailable(f"Chroma query failed: {exc}") from exc
        metas = (res["metadatas"] or [[]])[0]
        self._checked(tenant, metas)
        docs = (res["documents"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        return [(m["topic"], int(m["chunk"]), d, 1.0 - float(dist)) for m, d, dist in zip(metas, docs, dists)]

    def count(self, tenant: str) -> int:
        """Number of chunks stored for a tenant."""
        return len(self._open().get(where={"tenant": tenant}, include=[])["ids"])

    def chunk_ids(self, tenant: str) -> list[str]:
        return sorted(self._open().get(where={"tenant": tenant}, include=[])["ids"])
