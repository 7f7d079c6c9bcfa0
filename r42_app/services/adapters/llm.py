"""Claude through the Anthropic SDK (AsyncAnthropic, streaming, tools), behind a small interface.

The SDK client lives here, built once per process, never on Reflex State. Every SDK failure
becomes an `LLMError` with a kind and a message a learner can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import anthropic


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


class LLMError(Exception):
    """The model call failed: `kind` is auth | rate_limit | server | timeout | connection | bad_request."""

    def __init__(self, kind: str, message: str, retryable: bool = True):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable


def _usage(usage: Any) -> dict[str, int]:
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return {n: int(getattr(usage, n, 0) or 0) for n in names}


def map_error(exc: Exception) -> LLMError:
    """A readable, typed error for any SDK failure."""
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return LLMError("auth", "De AI-dienst weigert de toegang (controleer ANTHROPIC_API_KEY).", retryable=False)
    if isinstance(exc, anthropic.RateLimitError):
        return LLMError("rate_limit", "De AI-dienst krijgt nu te veel vragen. Probeer het over een minuut opnieuw.")
    if isinstance(exc, anthropic.APITimeoutError):
        return LLMError("timeout", "Het antwoord bleef te lang uit. Probeer het opnieuw.")
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMError("connection", "De verbinding met de AI-dienst viel weg. Probeer het opnieuw.")
    if isinstance(exc, anthropic.BadRequestError):
        return LLMError("bad_request", "De AI-dienst kon deze vraag niet verwerken.", retryable=False)
    if isinstance(exc, anthropic.APIStatusError):
        return LLMError("server", "De AI-dienst had een storing. Probeer het opnieuw.")
    return LLMError("server", "Er ging iets mis bij de AI-dienst. Probeer het opnieuw.")


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
            raise LLMError("connection", "De verbinding met de AI-dienst viel weg. Probeer het opnieuw.") from exc
        for block in final.content:
            if block.type == "tool_use":
                yield LLMEvent("tool_use", tool_id=block.id, tool_name=block.name, tool_input=dict(block.input or {}))
        yield LLMEvent("stop", stop_reason=final.stop_reason or "", usage=_usage(final.usage))
