"""A fake Anthropic Messages API on loopback, for the real `anthropic` SDK (ANTHROPIC_BASE_URL).

Tests script each response in order (`fake.reply_text(...)`, `fake.reply_tool(...)`, `fake.fail(500)`,
...) and read `fake.requests` to see exactly what the app sent. Streaming responses use the real SSE
event sequence: message_start, content_block_start/delta/stop, message_delta, message_stop.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route


@dataclass
class Script:
    blocks: list[dict] = field(default_factory=list)  # {"type": "text", "text"} or {"type": "tool_use", ...}
    status: int = 200
    error_event: str = ""  # send an SSE error event after the first text delta
    drop_after_first: bool = False  # close the connection after the first text delta
    delay: float = 0.0  # seconds before the response starts (timeouts)
    chunk_delay: float = 0.0  # seconds between text deltas
    held: bool = False  # stop after the first text delta until the test calls `release()` (a mid-stream state)
    echo_tool_result: str = ""  # answer with this prefix and the text of the last tool result it was sent
    stop_reason: str = ""  # instead of end_turn / tool_use (e.g. max_tokens: the model was cut off)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 1200, "output_tokens": 40,
                                                            "cache_creation_input_tokens": 1000,
                                                            "cache_read_input_tokens": 0})


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _last_tool_result(body: dict) -> str:
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        for block in reversed(content if isinstance(content, list) else []):
            if block.get("type") == "tool_result":
                inner = block.get("content")
                return inner if isinstance(inner, str) else " ".join(b.get("text", "") for b in inner or [])
    return "(no tool result)"


class FakeAnthropic:
    def __init__(self):
        self.scripts: list[Script] = []
        self.default: Script | None = None  # the answer when no script is left (benchmarks: the same every time)
        self.requests: list[dict] = []
        self.first_delta_at: list[float] = []  # wall-clock time each response sent its first text delta
        self._release = threading.Event()  # lets a `held` response go on
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting --------------------------------------------------------------------

    def reply_text(self, *pieces: str, **kw: Any) -> "FakeAnthropic":
        self.scripts.append(Script(blocks=[{"type": "text", "text": p} for p in pieces], **kw))
        return self

    def reply_tool(self, name: str, tool_input: dict, text: str = "", tool_id: str = "toolu_1",
                   **kw: Any) -> "FakeAnthropic":
        blocks = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
        self.scripts.append(Script(blocks=blocks, **kw))
        return self

    def reply_tools(self, calls: list[tuple[str, dict]], **kw: Any) -> "FakeAnthropic":
        """One response that calls several tools."""
        blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": inp} for i, (n, inp) in enumerate(calls)]
        self.scripts.append(Script(blocks=blocks, **kw))
        return self

    def reply_echo(self, prefix: str = "", **kw: Any) -> "FakeAnthropic":
        """Answer with what the last tool returned (a model that repeats a tool's output to the user)."""
        self.scripts.append(Script(echo_tool_result=prefix or " ", **kw))
        return self

    def fail(self, status: int, **kw: Any) -> "FakeAnthropic":
        self.scripts.append(Script(status=status, **kw))
        return self

    def release(self) -> None:
        """Let every `held` response stream its rest (and the ones held later, until the next reset)."""
        self._release.set()

    def reset(self) -> None:
        self._release.set()  # a response still held by an ended test must not hang its connection
        self._release = threading.Event()
        self.scripts.clear()
        self.requests.clear()
        self.first_delta_at.clear()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- server ---------------------------------------------------------------------------

    async def _messages(self, request: Request):
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body})
        script = self.scripts.pop(0) if self.scripts else self.default or Script(
            blocks=[{"type": "text", "text": "(no script)"}])
        if script.echo_tool_result:
            script = Script(blocks=[{"type": "text", "text": script.echo_tool_result + _last_tool_result(body)}])
        if script.delay:
            await asyncio.sleep(script.delay)
        if script.status != 200:
            kinds = {401: "authentication_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
            headers = {"retry-after": "0"} if script.status == 429 else {}
            return JSONResponse({"type": "error", "error": {"type": kinds.get(script.status, "api_error"),
                                                            "message": f"fake {script.status}"}},
                                status_code=script.status, headers=headers)
        if not body.get("stream"):
            return JSONResponse(self._message(body, script))
        return StreamingResponse(self._stream(body, script), media_type="text/event-stream")

    def _message(self, body: dict, script: Script) -> dict:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in script.blocks) else "end_turn"
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
                "content": script.blocks, "stop_reason": stop, "stop_sequence": None, "usage": script.usage}

    async def _stream(self, body: dict, script: Script):
        usage = script.usage
        yield _sse("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"), "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1}}})
        stop = "end_turn"
        for index, block in enumerate(script.blocks):
            if block["type"] == "text":
                yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}})
                words = block["text"].split(" ")
                for i, word in enumerate(words):
                    piece = word if i == 0 else " " + word
                    yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": piece}})
                    if i == 0 and index == 0:
                        self.first_delta_at.append(time.time())
                    if i == 0 and script.error_event:
                        yield _sse("error", {"type": "error", "error": {"type": script.error_event, "message": "fake"}})
                        return
                    if i == 0 and script.drop_after_first:
                        raise ConnectionResetError("fake drop")
                    if i == 0 and index == 0 and script.held:
                        release, waited = self._release, 0
                        while not release.is_set():  # the test looks at the stream mid-way, then releases it
                            await asyncio.sleep(0.02)
                            waited += 1
                            if waited % 25 == 0:  # as the real API does: a ping keeps a quiet stream alive
                                yield _sse("ping", {"type": "ping"})
                    if script.chunk_delay:
                        await asyncio.sleep(script.chunk_delay)
            else:
                stop = "tool_use"
                yield _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                raw = json.dumps(block["input"])
                for part in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                    yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "input_json_delta", "partial_json": part}})
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        stop = script.stop_reason or stop
        yield _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": usage})
        yield _sse("message_stop", {"type": "message_stop"})

    def start(self) -> "FakeAnthropic":
        app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
            self._thread.join(5)
