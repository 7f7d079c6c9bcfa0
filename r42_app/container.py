"""The one place R42's services are built: a `Services` container made from `Settings`.

Every part of a process (the Reflex states, `api.py`, the CLI, the workers) asks the process's container
(`services()`) for what it needs; nothing else constructs a store, an adapter or a client. Each service is
built on first use and kept for the life of the container, so a process opens one superuser connection, loads
the embedding model once and keeps one Anthropic client (one HTTP connection pool) for every turn.

Tests build a container per test from their own `Settings` (and, where the real thing cannot run, a fake
passed in), install it with `use()`, and `close()` it afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from r42_app.settings import Settings, load_settings

if TYPE_CHECKING:
    from r42_app.chat.external_runtime import ExternalRuntime
    from r42_app.chat.gap_draft import DraftDeps
    from r42_app.chat.rewrite import QuestionRewriter
    from r42_app.chat.tools import ToolRegistry
    from r42_app.chat.turn import ChatDeps
    from r42_app.services.adapters.embeddings import Embedder
    from r42_app.services.adapters.llm import AnthropicLLM
    from r42_app.services.adapters.mcp import McpHub
    from r42_app.services.adapters.oidc import ToolKey
    from r42_app.services.adapters.vector_store import VectorStore
    from r42_app.services.document_import import DocumentImporter
    from r42_app.services.gaps import GapsReport
    from r42_app.services.lti_launch import LtiLaunches
    from r42_app.services.lti_registration import LtiRegistrations
    from r42_app.services.outbox.costs import CostPersister
    from r42_app.services.outbox.indexer import Indexer
    from r42_app.services.retrieval import Retriever
    from r42_app.services.runtime.liveness import Liveness
    from r42_app.services.runtime.shared_state import SharedRateLimiter, SharedState
    from r42_app.services.sso_signin import SsoSignIn
    from r42_app.services.store.access import AccessStore
    from r42_app.services.store.audit import ToolAudit
    from r42_app.services.store.auth import AuthService
    from r42_app.services.store.costs import CostRecorder, CostReports, CreditStore
    from r42_app.services.store.documents import DocumentStore
    from r42_app.services.store.feedback import FeedbackStore
    from r42_app.services.store.forget import UserForgetter
    from r42_app.services.store.kb_store import KBStore
    from r42_app.services.store.lti import LtiStore
    from r42_app.services.store.pb import PocketBase
    from r42_app.services.store.people import People
    from r42_app.services.store.questions import QuestionLog
    from r42_app.services.store.quiz_store import QuizStore
    from r42_app.services.store.sso import SsoStore
    from r42_app.services.store.suggestions import SuggestionStore
    from r42_app.services.store.tenants import Tenants

T = TypeVar("T")
log = logging.getLogger(__name__)
_UNSET: Any = object()


class Services:
    """Every service of one process, built lazily from `settings`.

    `admin_pb`, `embedder` and `llm` may be given (a CLI command's own superuser connection, a test's fake
    model); everything else is built here. Building is thread-safe: two threads asking at once get one object.
    """

    def __init__(self, settings: Settings, *, admin_pb: PocketBase | None = None, embedder: Embedder | None = None,
                 llm: Any = _UNSET):
        self.settings = settings
        self._built: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._owns_pb = admin_pb is None
        if admin_pb is not None:
            self._built["admin_pb"] = admin_pb
        if embedder is not None:
            self._built["embedder"] = embedder
        if llm is not _UNSET:
            self._built["llm"] = llm

    def _once(self, name: str, build: Callable[[], T]) -> T:
        try:
            return self._built[name]
        except KeyError:
            pass
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            return self._built[name]

    def built(self, name: str) -> bool:
        """Whether `name` has been built yet (health checks that must not build what they report on)."""
        return name in self._built

    # -- PocketBase and its stores --------------------------------------------------------

    @property
    def admin_pb(self) -> PocketBase:
        """A superuser connection for server-side work (credentials from the data dir, never from the client)."""
        def build() -> PocketBase:
            from r42_app.services.runtime.pb_server import load_superuser
            from r42_app.services.store.pb import PocketBase

            creds = load_superuser(self.settings.superuser_file)
            return PocketBase(self.settings.pb_url).as_superuser(creds.email, creds.password)
        return self._once("admin_pb", build)

    @property
    def kb(self) -> KBStore:
        from r42_app.services.store.kb_store import KBStore

        return self._once("kb", lambda: KBStore(self.admin_pb))

    @property
    def people(self) -> People:
        from r42_app.services.adapters.mailer import Mailer
        from r42_app.services.store.people import People

        return self._once("people", lambda: People(self.admin_pb, Mailer.from_settings(self.settings),
                                                   self.settings.link_base))

    @property
    def tenants(self) -> Tenants:
        from r42_app.services.store.tenants import Tenants

        return self._once("tenants", lambda: Tenants(self.admin_pb))

    @property
    def documents(self) -> DocumentStore:
        from r42_app.services.store.documents import DocumentStore

        return self._once("documents", lambda: DocumentStore(self.admin_pb))

    @property
    def download_secret(self) -> str:
        """The key of the signed links to documents' original files (a secret in the data dir, made once)."""
        from r42_app.services.runtime.private import secret_file

        return self._once("download_secret", lambda: secret_file(self.settings.data_dir / "download.secret"))

    @property
    def importer(self) -> DocumentImporter:
        from r42_app.services.document_import import DocumentImporter

        return self._once("importer", lambda: DocumentImporter(self.documents))

    @property
    def auth(self) -> AuthService:
        """Sign-ins, sign-outs and token checks; the wrong-password limit per browser address and the sessions ended
        by a sign-out are in the shared state (with several backend workers in Redis, else each worker would allow
        it again)."""
        def build() -> AuthService:
            from r42_app.services.runtime.shared_state import SharedFailureLimiter
            from r42_app.services.store.auth import SIGNIN_FAILURES_PER_MINUTE, AuthService

            failures = SharedFailureLimiter(self.shared, "signin", limit=SIGNIN_FAILURES_PER_MINUTE, window=60.0)
            return AuthService(self.settings.pb_url, self.admin_pb, failures,
                               session_s=self.settings.session_hours * 3600, shared=self.shared,
                               passwords_allowed=self.sso.passwords_allowed)
        return self._once("auth", build)

    @property
    def sso(self) -> SsoStore:
        """Each tenant's identity provider, and the people who sign in through it."""
        def build() -> SsoStore:
            from r42_app.services.store.sso import SsoStore

            return SsoStore(self.admin_pb, loopback_ok=self._served_on_loopback())
        return self._once("sso", build)

    def _served_on_loopback(self) -> bool:
        """Whether the app itself is opened on this machine's loopback over http (development, the tests): only then
        may an identity provider or an LMS be an http address on loopback too."""
        from urllib.parse import urlsplit

        from r42_app.core.sso import is_loopback

        served = urlsplit(self.settings.link_base)
        return served.scheme == "http" and is_loopback(served.hostname or "")

    @property
    def lti(self) -> LtiStore:
        """The learning environments registered to each tenant (LTI 1.3), and the people who come in from them."""
        def build() -> LtiStore:
            from r42_app.services.store.lti import LtiStore

            return LtiStore(self.admin_pb, loopback_ok=self._served_on_loopback())
        return self._once("lti", build)

    @property
    def tool_key(self) -> ToolKey:
        """The LTI tool's signing key (an app secret: in backups, the same for every worker); `/lti/jwks` serves
        its public half."""
        def build() -> ToolKey:
            from r42_app.services.adapters.oidc import ToolKey
            from r42_app.services.store.app_secrets import stored_value

            return ToolKey(stored_value(self.admin_pb, "lti_tool_key", ToolKey.new_json))
        return self._once("tool_key", build)

    @property
    def frame_key(self) -> bytes:
        """The key that signs a launched page's permission to be framed by its learning environment (core/lti.py
        `frame_grant`): an app secret, so every worker and the security headers of each agree."""
        def build() -> bytes:
            import secrets

            from r42_app.services.store.app_secrets import stored_value

            return stored_value(self.admin_pb, "lti_frame_key", lambda: secrets.token_urlsafe(32)).encode()
        return self._once("frame_key", build)

    @property
    def lti_launches(self) -> LtiLaunches:
        """Opening R42 from a learning environment (api's /lti/login and /lti/launch)."""
        def build() -> LtiLaunches:
            from r42_app.core.identity import Tenant
            from r42_app.services.lti_launch import LtiLaunches

            oidc = self.sso_signin.oidc  # one cache of key sets for identity providers and platforms

            def topics(tenant_id: str) -> list[tuple[str, str]]:
                return [(t.slug, t.label) for t in self.kb.topic_summaries(Tenant(tenant_id, "", ""))]

            return LtiLaunches(self.lti, oidc, self.shared, self.auth, self.settings.own_origins +
                               ((self.settings.public_url,) if self.settings.public_url else ()),
                               lambda: self.tool_key, lambda: self.frame_key, self.settings.link_base, topics,
                               self.sso_signin.code_for)
        return self._once("lti_launches", build)

    @property
    def lti_registrations(self) -> LtiRegistrations:
        """Dynamic registration: an LMS registers itself to a tenant with a one-time URL (/lti/register)."""
        def build() -> LtiRegistrations:
            from r42_app.services.lti_registration import LtiRegistrations

            return LtiRegistrations(self.admin_pb, self.lti, self.sso_signin.oidc, self.settings.link_base)
        return self._once("lti_registrations", build)

    @property
    def sso_signin(self) -> SsoSignIn:
        """Signing in through the organisation's identity provider (api.py /auth/oidc/...)."""
        def build() -> SsoSignIn:
            from r42_app.services.adapters.oidc import OidcClient
            from r42_app.services.sso_signin import SsoSignIn

            return SsoSignIn(self.sso, OidcClient(), self.shared, self.auth)
        return self._once("sso_signin", build)

    @property
    def suggestions(self) -> SuggestionStore:
        from r42_app.services.store.suggestions import SuggestionStore

        return self._once("suggestions", lambda: SuggestionStore(self.admin_pb, self.kb))

    @property
    def feedback(self) -> FeedbackStore:
        from r42_app.services.store.feedback import FeedbackStore

        return self._once("feedback", lambda: FeedbackStore(self.admin_pb))

    @property
    def questions(self) -> QuestionLog:
        """The question log (issue 28): each turn's question, with a user key made from this deployment's secret (kept
        in PocketBase, so backups hold it; a data dir's older `question-log.secret` file is taken over once)."""
        from r42_app.services.store.app_secrets import stored_secret
        from r42_app.services.store.questions import QuestionLog

        legacy = self.settings.data_dir / "question-log.secret"
        return self._once("questions", lambda: QuestionLog(self.admin_pb,
                                                           stored_secret(self.admin_pb, "question_log", legacy)))

    @property
    def gaps(self) -> GapsReport:
        """The knowledge-gaps report over the question log (embeds with the chat's own model)."""
        from r42_app.services.gaps import GapsReport

        return self._once("gaps", lambda: GapsReport(self.admin_pb, self.questions, self.embedder.encode_queries))

    @property
    def gap_draft(self) -> DraftDeps | None:
        """What the model's draft of a gap's topic needs (chat/gap_draft.py); None offline."""
        from r42_app.chat.gap_draft import DraftDeps

        llm = self.llm
        if llm is None:
            return None
        return self._once("gap_draft", lambda: DraftDeps(gaps=self.gaps, kb=self.kb, llm=llm, credits=self.credits,
                                                         costs=self.cost_recorder,
                                                         upgrade_url=self.settings.upgrade_url))

    @property
    def forgetter(self) -> UserForgetter:
        """`r42 user forget`: one user's data deleted or anonymised."""
        from r42_app.services.adapters.mcp import demo_message_files, forget_in_demo_messages
        from r42_app.services.store.forget import UserForgetter

        def build() -> UserForgetter:
            cfg = self.settings  # the files R42's MCP demo server writes, and the backups that still hold the user
            files = [(path, forget_in_demo_messages)
                     for path in demo_message_files(cfg.mcp_config_file, cfg.mcp_demo_messages)]
            return UserForgetter(self.admin_pb, self.questions, files, cfg.data_dir / "backups")

        return self._once("forgetter", build)

    @property
    def quiz(self) -> QuizStore:
        from r42_app.services.store.quiz_store import QuizStore

        return self._once("quiz", lambda: QuizStore(self.admin_pb))

    @property
    def access(self) -> AccessStore:
        from r42_app.services.store.access import AccessStore

        return self._once("access", lambda: AccessStore(
            self.admin_pb, overrides_enabled=self.settings.capability_overrides_enabled))

    @property
    def cost_recorder(self) -> CostRecorder:
        def build() -> CostRecorder:
            from r42_app.services.store.costs import CostRecorder, PriceTable

            return CostRecorder(self.admin_pb, PriceTable.load(self.settings.price_table or None),
                                enabled=self.settings.cost_tracking)
        return self._once("cost_recorder", build)

    @property
    def cost_persister(self) -> CostPersister:
        from r42_app.services.outbox.costs import CostPersister

        return self._once("cost_persister", lambda: CostPersister(self.admin_pb))

    @property
    def cost_reports(self) -> CostReports:
        from r42_app.services.store.costs import CostReports

        return self._once("cost_reports", lambda: CostReports(self.admin_pb))

    @property
    def credits(self) -> CreditStore:
        from r42_app.services.store.costs import CreditStore

        return self._once("credits", lambda: CreditStore(self.admin_pb))

    @property
    def tool_audit(self) -> ToolAudit:
        from r42_app.services.store.audit import ToolAudit

        return self._once("tool_audit", lambda: ToolAudit(self.admin_pb))

    # -- what the backend workers share ---------------------------------------------------

    @property
    def shared(self) -> SharedState:
        """Confirmations, limits, heartbeats and stream/tab owners: in the Redis the backend workers share when
        settings.redis_url names one (several workers), else in this process."""
        def build() -> SharedState:
            from r42_app.services.runtime.shared_state import MemorySharedState, RedisSharedState

            return RedisSharedState(self.settings.redis_url) if self.settings.redis_url else MemorySharedState()
        return self._once("shared", build)

    @property
    def liveness(self) -> Liveness:
        """This worker's heartbeat; whether another worker, or an answer it streams, is alive."""
        from r42_app.services.runtime.liveness import Liveness

        return self._once("liveness", lambda: Liveness(self.shared))

    # -- search ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedding model, loaded on first use (R42_EMBED_MODEL; multilingual-e5-small by default)."""
        from r42_app.services.adapters.embeddings import make_embedder

        cfg = self.settings
        return self._once("embedder", lambda: make_embedder(cfg.embed_model, threads=cfg.embed_threads or None))

    @property
    def vectors(self) -> VectorStore:
        """Chroma: a server when CHROMA_URL is set, else embedded under the data dir."""
        def build() -> VectorStore:
            from r42_app.services.adapters.vector_store import VectorStore

            cfg = self.settings
            return VectorStore(path=cfg.chroma_dir, url=cfg.chroma_url, token=cfg.chroma_token,
                               model_id=self.embedder.model_id)
        return self._once("vectors", build)

    @property
    def retriever(self) -> Retriever:
        def build() -> Retriever:
            from r42_app.services.adapters.injection import install_learned_model
            from r42_app.services.retrieval import Retriever

            install_learned_model(self.settings.injection_model_file)  # the snippets' injection markers use it
            return Retriever(self.kb, self.vectors, self.embedder, cache_bytes=self.settings.vector_cache_mb << 20,
                             engine_passages=self.settings.vector_engine_passages)
        return self._once("retriever", build)

    @property
    def indexer(self) -> Indexer:
        from r42_app.services.outbox.indexer import Indexer

        return self._once("indexer", lambda: Indexer(self.admin_pb, self.kb, self.vectors, self.embedder))

    # -- the chat turn --------------------------------------------------------------------

    @property
    def llm(self) -> AnthropicLLM | None:
        """Claude when ANTHROPIC_API_KEY is set (one client, one connection pool for every turn), else None:
        the offline extractive answerer."""
        def build() -> AnthropicLLM | None:
            from r42_app.services.adapters.llm import AnthropicLLM

            cfg = self.settings
            if cfg.offline:
                return None
            return AnthropicLLM(cfg.anthropic_api_key, cfg.model, base_url=cfg.anthropic_base_url,
                                timeout=cfg.model_timeout)
        return self._once("llm", build)

    @property
    def mcp_hub(self) -> McpHub:
        """The MCP servers of this process (started by the app backend at boot)."""
        def build() -> McpHub:
            from r42_app.services.adapters.mcp import DEFAULT_REGISTRY, McpHub

            return McpHub.from_file(self.settings.mcp_config_file, DEFAULT_REGISTRY, enabled=self.settings.mcp_enabled)
        return self._once("mcp_hub", build)

    @property
    def rate_limiter(self) -> SharedRateLimiter:
        """The chat limit per user, in the shared state (with several workers in Redis, else each would grant
        the whole limit again)."""
        def build() -> SharedRateLimiter:
            from r42_app.services.runtime.shared_state import SharedRateLimiter

            cfg = self.settings
            return SharedRateLimiter(self.shared, "chat", per_minute=cfg.chat_per_minute, burst=cfg.chat_burst)
        return self._once("rate_limiter", build)

    @property
    def tools(self) -> ToolRegistry:
        """R42's own tools, plus the MCP servers' tools (capability external_tools) unless R42_MCP_ENABLED=false."""
        def build() -> ToolRegistry:
            from r42_app.chat.external import create_mcp_external_tools_provider
            from r42_app.chat.tools import builtin_registry
            from r42_app.services.adapters.mcp import DEFAULT_REGISTRY

            registry = builtin_registry()
            if self.settings.mcp_enabled:
                registry.add_provider(create_mcp_external_tools_provider(DEFAULT_REGISTRY))
            return registry
        return self._once("tools", build)

    @property
    def external(self) -> ExternalRuntime:
        """Audit, per-user-per-tool rate limit and confirmations of external tool calls (limit and confirmations
        in the shared state: one limit across the workers, and an answer may reach any of them)."""
        def build() -> ExternalRuntime:
            from r42_app.chat.external_runtime import ConfirmationBroker, ExternalRuntime
            from r42_app.services.runtime.shared_state import SharedRateLimiter

            per_minute = self.mcp_hub.config.calls_per_minute
            limiter = SharedRateLimiter(self.shared, "tool", per_minute=per_minute, burst=per_minute)
            return ExternalRuntime(self.tool_audit, limiter, ConfirmationBroker(self.shared))
        return self._once("external", build)

    @property
    def chat(self) -> ChatDeps:
        """What a chat turn needs, as one typed view of this container (the window and the HTTP API share it)."""
        def build() -> ChatDeps:
            from r42_app.chat.turn import ChatDeps

            llm = self.llm
            return ChatDeps(retriever=self.retriever, kb=self.kb, llm=llm, guards=self.access,
                            limiter=self.rate_limiter, tools=self.tools, suggestions=self.suggestions,
                            costs=None if llm is None else self.cost_recorder, upgrade_url=self.settings.upgrade_url,
                            external=self.external, rag_snippets=self.settings.rag_snippets_enabled,
                            questions=self.questions, rewriter=self.rewriter)
        return self._once("chat", build)

    @property
    def rewriter(self) -> QuestionRewriter | None:
        """The fast tier's rewrite of follow-up questions (R42_QUESTION_REWRITE=true, with a model), else None. Its
        model has a client of its own, which does not retry (its time is short)."""
        def build() -> QuestionRewriter | None:
            from r42_app.chat.rewrite import QuestionRewriter
            from r42_app.services.adapters.llm import AnthropicLLM

            cfg = self.settings
            if not cfg.question_rewrite:
                return None
            if self.llm is None:
                log.warning("R42_QUESTION_REWRITE is on but there is no model (ANTHROPIC_API_KEY): follow-up "
                            "questions are understood offline")
                return None
            llm = self._once("rewrite_llm", lambda: AnthropicLLM(  # no retry: a second try would not fit the time
                cfg.anthropic_api_key, cfg.question_rewrite_model, base_url=cfg.anthropic_base_url,
                timeout=cfg.question_rewrite_timeout, max_retries=0))
            return QuestionRewriter(llm, self.cost_recorder, cfg.question_rewrite_timeout)
        return self._once("rewriter", build)

    # -- life -------------------------------------------------------------------------------

    async def close_model_client(self) -> None:
        """Write the cost rows of the last turns (queued on this loop), then close the Anthropic client's connection
        pool (in the caller's event loop: the pool is async), if built."""
        chat = self._built.get("chat")
        if chat is not None and chat.costs is not None:
            await chat.costs.flush()
        for name in ("llm", "rewrite_llm"):
            llm = self._built.get(name)
            if llm is not None and hasattr(llm, "aclose"):
                await llm.aclose()

    async def aclose(self) -> None:
        """Close what holds connections, in the caller's event loop (the Anthropic client's pool is async)."""
        await self.close_model_client()
        if "liveness" in self._built:
            self._built["liveness"].stop()
        shared = self._built.get("shared")
        if shared is not None:
            await shared.close()
        self.close()

    def close(self) -> None:
        """Close the superuser connection (if this container opened it) and forget every built service."""
        with self._lock:
            pb = self._built.pop("admin_pb", None)
            self._built.clear()
        if pb is not None and self._owns_pb:
            with contextlib.suppress(Exception):
                pb.close()


class PocketBaseUnreachable(RuntimeError):
    """R42_PB_URL names a PocketBase that does not answer, or the embedded one would not start."""


def pocketbase_running(settings: Settings) -> bool:
    from r42_app.services.store.pb import PocketBase

    probe = PocketBase(settings.pb_url, timeout=2)
    try:
        return probe.health()
    finally:
        probe.close()


@contextlib.contextmanager
def connected(settings: Settings, wait_s: float = 0.0) -> Iterator[Services]:
    """A container on a superuser connection to the running PocketBase, or to one started just for this block
    (a CLI command). With `wait_s` and R42_PB_URL set, a PocketBase that is still starting is waited for.

    Commands at once on one data dir share one PocketBase (`_EmbeddedTurns`): they take turns to look for one and
    start it, and the command that started it stops it only when no other command uses it any more."""
    import time

    if settings.pb_url_override:
        deadline = time.monotonic() + wait_s
        running = pocketbase_running(settings)
        while not running and time.monotonic() < deadline:
            time.sleep(1)
            running = pocketbase_running(settings)
        if not running:
            raise PocketBaseUnreachable(f"PocketBase at {settings.pb_url} is not reachable")
        with _services_on(settings) as container:
            yield container
        return
    with _EmbeddedTurns(settings) as _turns, _services_on(settings) as container:
        yield container


@contextlib.contextmanager
def _services_on(settings: Settings) -> Iterator[Services]:
    container = Services(settings)
    try:
        _ = container.admin_pb  # signs in now: a wrong superuser file fails here, not halfway through a command
        yield container
    finally:
        container.close()


class _EmbeddedTurns:
    """The data dir's PocketBase for one CLI command: the one running (`r42 serve`'s, or another command's), else
    one started for this command. Two locks in the data dir (flock: released by the kernel when a process dies):
    `.pocketbase-start.lock`, held while a command looks for a PocketBase and starts one (two commands at once
    started two on one database, and the second one's died on the taken port while its command went on), and
    `.pocketbase-users.lock`, held shared by every command that uses one, so the command that started it waits for
    the others before it stops it (it stopped it under them)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.server: Any = None
        self._start_fd = self._users_fd = -1

    def __enter__(self) -> _EmbeddedTurns:
        import fcntl
        import os

        from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
        from r42_app.services.runtime.private import private_data_dir

        data = self.settings.data_dir
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._start_fd = os.open(data / ".pocketbase-start.lock", os.O_RDWR | os.O_CREAT, 0o600)
        self._users_fd = os.open(data / ".pocketbase-users.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._start_fd, fcntl.LOCK_EX)
        try:
            if not pocketbase_running(self.settings):
                private_data_dir(data)
                ensure_superuser(self.settings.pb_data_dir, self.settings.superuser_file)
                self.server = PocketBaseServer(self.settings.pb_data_dir, self.settings.pb_port,
                                               origins=self.settings.allowed_origins).start()
            fcntl.flock(self._users_fd, fcntl.LOCK_SH)
        except RuntimeError as exc:  # says what failed, secrets masked
            self._close()
            raise PocketBaseUnreachable(str(exc)) from None
        except BaseException:
            self._close()
            raise
        fcntl.flock(self._start_fd, fcntl.LOCK_UN)
        return self

    def __exit__(self, *_exc: object) -> None:
        import fcntl
        import sys

        try:
            if self.server is not None:
                fcntl.flock(self._start_fd, fcntl.LOCK_EX)  # nobody starts using it while it stops
                fcntl.flock(self._users_fd, fcntl.LOCK_UN)
                try:
                    fcntl.flock(self._users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    print("waiting for the other r42 commands that use this PocketBase to finish, then stopping it",
                          file=sys.stderr, flush=True)
                    fcntl.flock(self._users_fd, fcntl.LOCK_EX)
                self.server.stop()
        finally:
            self._close()

    def _close(self) -> None:
        import os

        for fd in (self._start_fd, self._users_fd):
            if fd >= 0:
                os.close(fd)  # closing releases its locks
        self._start_fd = self._users_fd = -1


_current: Services | None = None
_current_lock = threading.Lock()


def services() -> Services:
    """The container of this process, built from the environment on first use."""
    global _current
    current = _current
    if current is not None:
        return current
    with _current_lock:
        if _current is None:
            _current = Services(load_settings())
        return _current


def use(container: Services | None) -> Services | None:
    """Make `container` this process's container (None: build a fresh one from the environment on next use);
    returns the one it replaces."""
    global _current
    with _current_lock:
        previous, _current = _current, container
    return previous


@contextlib.contextmanager
def using(container: Services) -> Iterator[Services]:
    """`container` as this process's container for a block (tests), the previous one back afterwards."""
    previous = use(container)
    try:
        yield container
    finally:
        use(previous)
