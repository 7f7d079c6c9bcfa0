"""Claude through the Anthropic SDK (AsyncAnthropic, streaming, tools), behind a small interface.

The SDK client lives here, built once per process, never on Reflex State. Every SDK failure
becomes an `LLMError` with a kind and a catalogue code (`user_message`, what a learner can act on).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic import AsyncStream

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
    """The token counts of an event's `usage` (a dict; anything else counts as none)."""
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    if not isinstance(usage, dict):
        return dict.fromkeys(names, 0)
    out = {}
    for n in names:
        value = usage.get(n)
        out[n] = int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0
    return out


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


def _cheap_idle_probe() -> None:
    """Make the SDK's connection pool's check of idle connections cheap (issue 26; once per process).

    At every request and every response closed, httpcore2's pool asks each idle keep-alive connection whether the
    server closed it (`has_expired` -> `get_extra_info("is_readable")`), and each ask looked the raw socket up
    through anyio's typed attributes, which builds a dict of lambdas per call. With the SDK's 100 keep-alive
    connections and fifty learners at once that was a sixth of the worker's Python time. The socket of a stream
    never changes, so it is looked up once per stream; the probe itself (a zero-timeout select) is unchanged.
    If httpcore2 is not laid out as expected, nothing is patched."""
    try:
        from httpcore2._backends import anyio as backend
    except ImportError:
        return
    stream_class = getattr(backend, "AnyIOStream", None)
    probe = getattr(backend, "is_socket_readable", None)
    original = getattr(stream_class, "get_extra_info", None)
    if stream_class is None or probe is None or original is None or getattr(original, "r42_cached", False):
        return

    def get_extra_info(self: Any, info: str) -> Any:
        if info != "is_readable":
            return original(self, info)
        try:
            sock = self.__dict__["_r42_socket"]
        except KeyError:
            sock = self.__dict__["_r42_socket"] = original(self, "socket")
        return probe(sock)

    get_extra_info.r42_cached = True  # type: ignore[attr-defined]
    stream_class.get_extra_info = get_extra_info


class AnthropicLLM:
    """Streams one model response; tool calls come out complete (their JSON assembled by the SDK)."""

    def __init__(self, api_key: str, model: str, base_url: str = "", timeout: float = 60.0, max_retries: int = 1,
                 http_client: Any = None):
        self.model = model
        self.timeout = timeout  # also the budget for the response to start, the SDK's retries included
        _cheap_idle_probe()
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=max_retries,
            http_client=http_client,
        )

    async def aclose(self) -> None:
        await self.client.close()

    @property
    def closed(self) -> bool:
        return self.client.is_closed()

    async def warm(self) -> None:
        """Run one canned response through the same SDK path as `stream`, on a client of its own whose transport
        answers in memory: nothing leaves the process. The SDK builds its parsers and event types on first use
        (~40 ms here); after this the first learner's question does not pay for that."""
        import httpx2  # the SDK's own HTTP client (anthropic 2.x); MockTransport answers without a socket

        def answer(_request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_WARM_STREAM)

        warm = AnthropicLLM("warm-up", self.model, base_url="http://warm-up.invalid", max_retries=0,
                            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)))
        try:
            tool = {"name": "warm", "description": "warm", "input_schema": {"type": "object"}}
            async for _event in warm.stream([{"type": "text", "text": "warm"}], [{"role": "user", "content": "warm"}],
                                            [tool]):
                pass
        finally:
            await warm.aclose()

    async def stream(self, system: list[dict], messages: list[dict], tools: list[dict],
                     max_tokens: int = 1024) -> AsyncIterator[LLMEvent]:
        """The response's server-sent events, assembled here: text pieces as they come, each tool call once its
        block ends (its JSON arguments joined from their deltas), the usage of message_start at once and the final
        one with the stop. The SDK sends the request (retries, headers, status errors) and splits the events
        (`AsyncStream.raw_events`); their JSON is read here as plain dicts. (The SDK's typed events cost ~0.3 ms
        of CPU each to build and validate, a third of the turn's Python time under load (issue 26); its
        `messages.stream` helper also rebuilt a snapshot of the whole message on every event.)"""
        kwargs: dict[str, Any] = {"model": self.model, "system": system, "messages": messages, "max_tokens": max_tokens}
        if tools:
            kwargs["tools"] = tools
        usage: dict[str, int] = {}
        stop_reason = ""
        calls: list[LLMEvent] = []
        blocks: dict[int, tuple[LLMEvent, list[str]]] = {}  # index -> (the tool call, its JSON pieces)
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:  # R42_MODEL_TIMEOUT is what a learner waits for the answer to start, not per SDK attempt
                    async with asyncio.timeout(self.timeout):
                        response = await stack.enter_async_context(
                            self.client.messages.with_streaming_response.create(stream=True, **kwargs))
                except TimeoutError as exc:
                    raise LLMError("timeout", f"no response within {self.timeout:g} s, retries included") from exc
                http = response.http_response
                async for sse in AsyncStream.raw_events(http):
                    kind = sse.event
                    if kind is None or kind == "ping":
                        continue
                    if kind == "error":  # as the SDK's own stream raises it
                        try:
                            body: Any = json.loads(sse.data)
                            message = f"{body}"
                        except ValueError:
                            body, message = sse.data, sse.data or f"Error code: {http.status_code}"
                        raise anthropic.APIStatusError(message, response=http, body=body)
                    if not sse.data:
                        continue
                    event = json.loads(sse.data)
                    if kind == "content_block_delta":
                        delta = event.get("delta") or {}
                        kind = delta.get("type")
                        if kind == "text_delta":
                            if text := delta.get("text"):
                                yield LLMEvent("text", text=str(text))
                        elif kind == "input_json_delta" and event.get("index") in blocks:
                            blocks[event["index"]][1].append(str(delta.get("partial_json") or ""))
                    elif kind == "content_block_start":
                        block = event.get("content_block") or {}
                        if block.get("type") == "tool_use":
                            given = block.get("input")
                            call = LLMEvent("tool_use", tool_id=str(block.get("id") or ""),
                                            tool_name=str(block.get("name") or ""),
                                            tool_input=dict(given) if isinstance(given, dict) else {})
                            blocks[event.get("index")] = (call, [])
                    elif kind == "content_block_stop" and event.get("index") in blocks:
                        call, pieces = blocks.pop(event["index"])
                        if pieces:
                            call.tool_input = _arguments("".join(pieces))
                        calls.append(call)
                    elif kind == "message_start":  # what is spent already, if the round ends early
                        usage = _usage((event.get("message") or {}).get("usage"))
                        yield LLMEvent("usage", usage=dict(usage))
                    elif kind == "message_delta":
                        stop_reason = (event.get("delta") or {}).get("stop_reason") or stop_reason
                        for name, value in _usage(event.get("usage")).items():  # output_tokens always; the rest if sent
                            if value or name == "output_tokens":
                                usage[name] = value
        except LLMError:
            raise
        except anthropic.AnthropicError as exc:
            raise map_error(exc) from exc
        except Exception as exc:  # the transport failing mid-stream (peer reset, truncated body), a garbled event
            raise LLMError("connection", f"the stream broke off: {exc!r}") from exc
        for call in calls:
            yield call
        yield LLMEvent("stop", stop_reason=stop_reason, usage=usage)


def _arguments(text: str) -> dict[str, Any]:
    """A tool call's JSON arguments; {} when they are not a JSON object (the tool then says what is missing)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


# every event kind a turn's response has: text, a tool call with its JSON, the stop with usage
_WARM_STREAM = "".join([
    _sse("message_start", {"type": "message_start", "message": {
        "id": "msg_warm", "type": "message", "role": "assistant", "model": "warm", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "ok"}}),
    _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    _sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_warm", "name": "warm", "input": {}}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
        "type": "input_json_delta", "partial_json": "{}"}}),
    _sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
    _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
    _sse("message_stop", {"type": "message_stop"}),
]).encode()
