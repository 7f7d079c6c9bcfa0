"""Claude through the Anthropic SDK (AsyncAnthropic, streaming, tools), behind a small interface.

The SDK client lives here, built once per process, never on Reflex State. Every SDK failure
becomes an `LLMError` with a kind and a catalogue code (`user_message`, what a learner can act on).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic

from r42_app.core.errors import UserError


@dataclass
class LLMEvent:
    """`text` (a streamed piece), `usage` (the tokens of the round so far, as the response starts: what a
    round that fails or is stopped later still cost), `tool_use` (a complete tool call) or `stop` (with the
    round's final usage)."""

    kind: str
    text: str = ""
    tool_id: str = ""
    tool_name: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    stop_reason: str = ""
    usage: dict[str, int] = field(default_factory=dict)


class LLMError(UserError):
    """The model call failed: `kind` is auth | rate_limit | server | timeout | connection | bad_request; the
    code is `llm.<kind>` unless another is given."""

    code_prefix = "llm."

    def __init__(self, kind: str, detail: str = "", retryable: bool = True, code: str = ""):
        super().__init__(code or self.code_prefix + kind, detail or f"model call failed: {kind}")
        self.kind = kind
        self.retryable = retryable


def _usage(usage: Any) -> dict[str, int]:
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return {n: int(getattr(usage, n, 0) or 0) for n in names}


def map_error(exc: Exception) -> LLMError:
    """A readable, typed error for any SDK failure."""
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return LLMError("auth", str(exc), retryable=False)
    if isinstance(exc, anthropic.RateLimitError):
        return LLMError("rate_limit", str(exc))
    if isinstance(exc, anthropic.APITimeoutError):
        return LLMError("timeout", str(exc))
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMError("connection", str(exc))
    if isinstance(exc, anthropic.BadRequestError):
        return LLMError("bad_request", str(exc), retryable=False)
    if isinstance(exc, anthropic.APIStatusError):
        return LLMError("server", str(exc))
    return LLMError("server", str(exc), code="llm.unknown")


class AnthropicLLM:
    """Streams one model response; tool calls come out complete (their JSON assembled by the SDK)."""

    def __init__(self, api_key: str, model: str, base_url: str = "", timeout: float = 60.0, max_retries: int = 1):
        self.model = model
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=max_retries
        )

    async def aclose(self) -> None:
        await self.client.close()

    async def stream(self, system: list[dict], messages: list[dict], tools: list[dict],
                     max_tokens: int = 1024) -> AsyncIterator[LLMEvent]:
        kwargs: dict[str, Any] = {"model": self.model, "system": system, "messages": messages, "max_tokens": max_tokens}
        if tools:
            kwargs["tools"] = tools
        try:
            async with self.client.messages.stream(**kwargs) as stream:
                async for event in stream:
                    if event.type == "text" and event.text:
                        yield LLMEvent("text", text=event.text)
                    elif event.type == "message_start":  # what is spent already, if the round ends early
                        yield LLMEvent("usage", usage=_usage(event.message.usage))
                final = await stream.get_final_message()
        except anthropic.AnthropicError as exc:
            raise map_error(exc) from exc
        except Exception as exc:  # the transport failing mid-stream (peer reset, truncated body)
            raise LLMError("connection", f"the stream broke off: {exc!r}") from exc
        for block in final.content:
            if block.type == "tool_use":
                yield LLMEvent("tool_use", tool_id=block.id, tool_name=block.name, tool_input=dict(block.input or {}))
        yield LLMEvent("stop", stop_reason=final.stop_reason or "", usage=_usage(final.usage))
