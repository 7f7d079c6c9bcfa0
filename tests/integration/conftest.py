"""Fixtures shared by the integration tests: the demo knowledge base indexed into a fresh Chroma."""

import pytest

from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import KBStore


@pytest.fixture(scope="session")
def embedder():
    return make_embedder()  # the product's default: multilingual-e5-small


@pytest.fixture(scope="session")
def indexed(admin_pb, seeded, embedder, tmp_path_factory):
    """Demo and acme indexed into a fresh Chroma directory through the outbox."""
    kb = KBStore(admin_pb)
    vectors = VectorStore(path=tmp_path_factory.mktemp("chroma"), model_id=embedder.model_id)
    indexer = Indexer(admin_pb, kb, vectors, embedder)
    for slug in ("demo", "acme"):
        kb.emit_reindex(kb.require_tenant(slug))
    stats = indexer.drain()
    assert stats.failed_rows == 0
    return kb, vectors, indexer, Retriever(kb, vectors, embedder)


@pytest.fixture
def retriever(indexed):
    return indexed[3]



@pytest.fixture
async def api_env(pb_server, seeded, claude, monkeypatch):
    """The app's services and chat deps pointed at the test PocketBase and the fake Claude (for the
    HTTP API); yields the fake. The turn's Anthropic client is closed in the test's own event loop (one
    left to the garbage collector tries to close itself on a later test's loop: "Event loop is closed")."""
    from r42_app.chat import deps as chat_deps
    from r42_app.services import deps

    monkeypatch.setenv("R42_PB_URL", pb_server.url)
    monkeypatch.setenv("R42_DATA_DIR", str(pb_server.data_dir))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
    monkeypatch.setenv("R42_MODEL", "claude-test")
    deps.reset()
    chat_deps.reset()
    yield claude
    await rebuild_chat_deps()


async def rebuild_chat_deps() -> None:
    """Forget the app's services after an environment change, closing the turn's Anthropic client in
    this test's event loop first (one left to the garbage collector tries to close itself on a later
    test's loop: "Event loop is closed")."""
    from r42_app.chat import deps as chat_deps
    from r42_app.services import deps

    if chat_deps.chat_deps.cache_info().currsize and chat_deps.chat_deps().llm is not None:
        await chat_deps.chat_deps().llm.aclose()
    deps.reset()
    chat_deps.reset()
