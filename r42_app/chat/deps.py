"""The chat turn's dependencies for this process (the UI and the HTTP API share them)."""

from __future__ import annotations

import functools

from r42_app.chat.external import ExternalRuntime, create_mcp_external_tools_provider
from r42_app.chat.tools import ToolRegistry, builtin_registry
from r42_app.chat.turn import ChatDeps
from r42_app.core.ratelimit import RateLimiter
from r42_app.services import deps
from r42_app.services.adapters.llm import AnthropicLLM
from r42_app.services.adapters.mcp import DEFAULT_REGISTRY
from r42_app.services.store.audit import ToolAudit


@functools.lru_cache(maxsize=1)
def chat_deps() -> ChatDeps:
    """Claude when ANTHROPIC_API_KEY is set, else the offline extractive answerer."""
    cfg = deps.settings()
    llm = None if cfg.offline else AnthropicLLM(cfg.anthropic_api_key, cfg.model, base_url=cfg.anthropic_base_url,
                                                timeout=cfg.model_timeout)
    return ChatDeps(retriever=deps.retriever(), kb=deps.kb_store(), llm=llm, quiz=deps.quiz_store(),
                    access=deps.access_store(), limiter=rate_limiter(), tools=tool_registry(),
                    suggestions=deps.suggestion_store(), costs=None if llm is None else deps.cost_recorder(),
                    upgrade_url=cfg.upgrade_url, external=external_runtime(), rag_snippets=cfg.rag_snippets_enabled)


@functools.lru_cache(maxsize=1)
def rate_limiter():
    """The chat limit per user: in memory for one backend worker; in the shared Redis when several workers
    serve the app (else each would grant the whole limit again)."""
    cfg = deps.settings()
    if cfg.redis_url:
        from r42_app.services.runtime.shared_limiter import SharedRateLimiter

        return SharedRateLimiter(cfg.redis_url, per_minute=cfg.chat_per_minute, burst=cfg.chat_burst)
    return RateLimiter(per_minute=cfg.chat_per_minute, burst=cfg.chat_burst)


@functools.lru_cache(maxsize=1)
def tool_registry() -> ToolRegistry:
    """R42's own tools, plus the MCP servers' tools (capability external_tools) unless R42_MCP_ENABLED=false."""
    registry = builtin_registry()
    if deps.settings().mcp_enabled:
        registry.add_provider(create_mcp_external_tools_provider(DEFAULT_REGISTRY))
    return registry


@functools.lru_cache(maxsize=1)
def external_runtime() -> ExternalRuntime:
    """Audit, per-user-per-tool rate limit and confirmations of external tool calls (one per process)."""
    per_minute = deps.mcp_hub().config.calls_per_minute
    redis_url = deps.settings().redis_url
    if redis_url:  # several workers: one limit per user and tool across them
        from r42_app.services.runtime.shared_limiter import SharedRateLimiter

        limiter = SharedRateLimiter(redis_url, per_minute=per_minute, burst=per_minute, prefix="r42:rl:tool:")
    else:
        limiter = RateLimiter(per_minute=per_minute, burst=per_minute)
    return ExternalRuntime(ToolAudit(deps.admin_pb()), limiter)


def reset() -> None:
    chat_deps.cache_clear()
    rate_limiter.cache_clear()
    tool_registry.cache_clear()
    external_runtime.cache_clear()
