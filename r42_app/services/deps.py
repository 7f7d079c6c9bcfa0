"""Build the app's services once per process from the settings; everything else asks here."""

from __future__ import annotations

import functools

from r42_app.services.adapters.embeddings import Embedder, make_embedder
from r42_app.services.adapters.mcp import DEFAULT_REGISTRY, McpHub
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.runtime.pb_server import load_superuser
from r42_app.services.store.access import AccessStore
from r42_app.services.store.auth import SIGNIN_FAILURES_PER_MINUTE, AuthService
from r42_app.services.store.costs import CostPersister, CostRecorder, PriceTable
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import PocketBase
from r42_app.services.store.quiz_store import QuizStore
from r42_app.services.store.suggestions import SuggestionStore
from r42_app.settings import Settings, load_settings


@functools.lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()


@functools.lru_cache(maxsize=1)
def admin_pb() -> PocketBase:
    """A superuser connection for server-side work (credentials from the data dir, never from the client)."""
    cfg = settings()
    creds = load_superuser(cfg.superuser_file)
    return PocketBase(cfg.pb_url).as_superuser(creds.email, creds.password)


@functools.lru_cache(maxsize=1)
def kb_store() -> KBStore:
    return KBStore(admin_pb())


@functools.lru_cache(maxsize=1)
def auth_service() -> AuthService:
    """Sign-ins and token checks; with several backend workers (a Redis URL) the wrong-password limit per
    browser address is shared in Redis, else each worker would allow it again."""
    cfg = settings()
    failures = None
    if cfg.redis_url:
        from r42_app.services.runtime.shared_limiter import SharedFailureLimiter

        failures = SharedFailureLimiter(cfg.redis_url, limit=SIGNIN_FAILURES_PER_MINUTE, window=60.0)
    return AuthService(cfg.pb_url, admin_pb(), failures, session_s=cfg.session_hours * 3600)


@functools.lru_cache(maxsize=1)
def embedder() -> Embedder:
    """The embedding model, loaded on first use (R42_EMBED_MODEL; multilingual-e5-small by default)."""
    return make_embedder(settings().embed_model)


@functools.lru_cache(maxsize=1)
def vector_store() -> VectorStore:
    """Chroma: a server when CHROMA_URL is set, else embedded under the data dir."""
    cfg = settings()
    return VectorStore(path=cfg.chroma_dir, url=cfg.chroma_url, token=cfg.chroma_token, model_id=embedder().model_id)


@functools.lru_cache(maxsize=1)
def retriever() -> Retriever:
    from r42_app.services.adapters.injection import install_learned_model

    install_learned_model(settings().injection_model_file)  # the snippets' injection markers use it
    return Retriever(kb_store(), vector_store(), embedder(), cache_bytes=settings().vector_cache_mb << 20)


@functools.lru_cache(maxsize=1)
def indexer() -> Indexer:
    return Indexer(admin_pb(), kb_store(), vector_store(), embedder())


@functools.lru_cache(maxsize=1)
def suggestion_store() -> SuggestionStore:
    return SuggestionStore(admin_pb(), kb_store())


def feedback_store():
    from r42_app.services.store.feedback import FeedbackStore

    return FeedbackStore(admin_pb())


@functools.lru_cache(maxsize=1)
def quiz_store() -> QuizStore:
    return QuizStore(admin_pb())


@functools.lru_cache(maxsize=1)
def access_store() -> AccessStore:
    return AccessStore(admin_pb(), overrides_enabled=settings().capability_overrides_enabled)


@functools.lru_cache(maxsize=1)
def cost_recorder() -> CostRecorder:
    cfg = settings()
    return CostRecorder(admin_pb(), PriceTable.load(cfg.price_table or None), enabled=cfg.cost_tracking)


@functools.lru_cache(maxsize=1)
def cost_persister() -> CostPersister:
    return CostPersister(admin_pb())


@functools.lru_cache(maxsize=1)
def mcp_hub() -> McpHub:
    """The MCP servers of this process (started by the app backend at boot)."""
    cfg = settings()
    return McpHub.from_file(cfg.mcp_config_file, DEFAULT_REGISTRY, enabled=cfg.mcp_enabled)


def reset() -> None:
    """Forget every built service (tests that change the environment call this)."""
    for fn in (settings, admin_pb, kb_store, auth_service, embedder, vector_store, retriever, indexer,
               suggestion_store, quiz_store, access_store, cost_recorder, cost_persister, mcp_hub):
        fn.cache_clear()
