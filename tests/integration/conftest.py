"""Fixtures shared by the integration tests: the demo knowledge base indexed into a fresh Chroma."""

import pytest

from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import KBStore
from tests.vector_cache import RememberedVectors


@pytest.fixture(scope="session")
def embedder():
    return make_embedder()  # the product's default: multilingual-e5-small


@pytest.fixture(scope="session")
def indexed(admin_pb, seeded, embedder, tmp_path_factory):
    """Demo and acme indexed into a fresh Chroma directory through the outbox. The seed's passage vectors come
    from the machine's cache of what this model made of these texts before (tests/vector_cache.py): every xdist
    worker builds this, and embedding the seed cost each one ~40 s of a CPU core. The indexer, Chroma and the
    retriever run as ever, and queries are always embedded by the model."""
    kb = KBStore(admin_pb)
    vectors = VectorStore(path=tmp_path_factory.mktemp("chroma"), model_id=embedder.model_id)
    for slug in ("demo", "acme"):
        kb.emit_reindex(kb.require_tenant(slug))
    with RememberedVectors(embedder, "seed") as remembered:
        stats = Indexer(admin_pb, kb, vectors, remembered).drain()
    assert stats.failed_rows == 0
    return kb, vectors, Indexer(admin_pb, kb, vectors, embedder), Retriever(kb, vectors, embedder)


@pytest.fixture
def retriever(indexed):
    return indexed[3]



@pytest.fixture
async def api_env(pb_server, seeded, claude, monkeypatch):
    """A services container of this test's own, pointed at the test PocketBase and the fake Claude (for the
    HTTP API); yields the fake. The container is closed in the test's own event loop (an Anthropic client left
    to the garbage collector tries to close itself on a later test's loop: "Event loop is closed")."""
    from r42_app import container

    monkeypatch.setenv("R42_PB_URL", pb_server.url)
    monkeypatch.setenv("R42_DATA_DIR", str(pb_server.data_dir))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
    monkeypatch.setenv("R42_MODEL", "claude-test")
    previous = container.use(None)
    yield claude
    await rebuild_services()
    container.use(previous)


async def rebuild_services() -> None:
    """Close this process's container (in this test's event loop) and build the next one from the environment on
    its next use: what a restart with a changed environment does."""
    from r42_app import container

    built = container.use(None)
    if built is not None:
        await built.aclose()
