"""Fixtures shared by the integration tests: the demo knowledge base indexed into a fresh Chroma."""

import pytest

from r42_app.services.embeddings import SentenceEmbedder
from r42_app.services.indexer import Indexer
from r42_app.services.kb_store import KBStore
from r42_app.services.retrieval import Retriever
from r42_app.services.vector_store import VectorStore


@pytest.fixture(scope="session")
def embedder():
    return SentenceEmbedder()


@pytest.fixture(scope="session")
def indexed(admin_pb, seeded, embedder, tmp_path_factory):
    """Demo and acme indexed into a fresh Chroma directory through the outbox."""
    kb = KBStore(admin_pb)
    vectors = VectorStore(path=tmp_path_factory.mktemp("chroma"))
    indexer = Indexer(admin_pb, kb, vectors, embedder)
    for slug in ("demo", "acme"):
        kb.emit_reindex(kb.require_tenant(slug))
    stats = indexer.drain()
    assert stats.failed_rows == 0
    return kb, vectors, indexer, Retriever(kb, vectors, embedder)


@pytest.fixture
def retriever(indexed):
    return indexed[3]

