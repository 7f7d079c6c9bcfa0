"""The chat turn's dependencies for this process (the UI and the HTTP API share them)."""

from __future__ import annotations

import functools

from r42_app.chat.tools import ToolRegistry, builtin_registry
from r42_app.chat.turn import ChatDeps
from r42_app.core.ratelimit import RateLimiter
from r42_app.services import deps
from r42_app.services.llm import AnthropicLLM


@functools.lru_cache(maxsize=1)
def chat_deps() -> ChatDeps:
    """Claude when ANTHROPIC_API_KEY is set, else the offline extractive answerer."""
    cfg = deps.settings()
    llm = None if cfg.offline else AnthropicLLM(cfg.anthropic_api_key, cfg.model, base_url=cfg.anthropic_base_url,
                                                timeout=cfg.model_timeout)
    return ChatDeps(retriever=deps.retriever(), kb=deps.kb_store(), llm=llm, quiz=deps.quiz_store(),
                    access=deps.access_store(), limiter=rate_limiter(), tools=tool_registry(),
                    suggestions=deps.suggestion_store(), costs=None if llm is None else deps.cost_recorder(),
                    upgrade_url=cfg.upgrade_url)


@functools.lru_cache(maxsize=1)
def rate_limiter() -> RateLimiter:
    cfg = deps.settings()
    return RateLimiter(per_minute=cfg.chat_per_minute, burst=cfg.chat_burst)


@functools.lru_cache(maxsize=1)
def tool_registry() -> ToolRegistry:
    """R42's own tools (MCP providers plug in here)."""
    return builtin_registry()


def reset() -> None:
    chat_deps.cache_clear()
    rate_limiter.cache_clear()
    tool_registry.cache_clear()
