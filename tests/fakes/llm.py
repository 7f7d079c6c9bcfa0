"""A fake model in this process, with the interface of `AnthropicLLM` (`stream`, `aclose`, `model`).

For the tests of the chat turn's own logic (tool rounds, history, citations, errors, proposed edits); the
integration tests drive the real SDK against the loopback fake in anthropic_api.py instead. Tests script each
response in order, as with that fake (`llm.reply_text(...)`, `llm.reply_tool(...)`, `llm.fail("server")`), and
read `llm.requests` to see exactly what the turn asked: {"system", "messages", "tools"}, copied at call time.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from r42_app.services.adapters.llm import LLMError, LLMEvent

USAGE = {"input_tokens": 1200, "output_tokens": 40, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 0}


@dataclass
class Script:
    pieces: list[str] = field(default_factory=list)  # the text, streamed one piece per event
    calls: list[LLMEvent] = field(default_factory=list)  # tool_use events, complete (as the SDK assembles them)
    error: LLMError | None = None  # raised after the pieces, instead of the tool calls and the stop
    usage: dict[str, int] = field(default_factory=lambda: dict(USAGE))


class FakeLLM:
    """A model that streams what the test scripted, one response per `stream` call."""

    def __init__(self, model: str = "claude-test"):
        self.model = model
        self.scripts: list[Script] = []
        self.requests: list[dict[str, Any]] = []
        self.closed = False

    # -- scripting --------------------------------------------------------------------

    def reply_text(self, *pieces: str, usage: dict[str, int] | None = None) -> "FakeLLM":
        self.scripts.append(Script(list(pieces), usage=dict(usage or USAGE)))
        return self

    def reply_tool(self, name: str, tool_input: dict, text: str = "", tool_id: str = "toolu_1") -> "FakeLLM":
        return self.reply_tools([(name, tool_input)], text=text, ids=[tool_id])

    def reply_tools(self, calls: list[tuple[str, dict]], text: str = "", ids: list[str] | None = None) -> "FakeLLM":
        """One response that calls several tools (ids toolu_0, toolu_1, ... unless given)."""
        ids = ids or [f"toolu_{i}" for i in range(len(calls))]
        events = [LLMEvent("tool_use", tool_id=i, tool_name=n, tool_input=inp) for i, (n, inp) in zip(ids, calls)]
        self.scripts.append(Script([text] if text else [], events))
        return self

    def fail(self, kind: str = "server", *, after: tuple[str, ...] = (), retryable: bool = True) -> "FakeLLM":
        """A response that fails with LLMError(kind) once the pieces `after` are streamed."""
        self.scripts.append(Script(list(after), error=LLMError(kind, f"fake {kind} error", retryable)))
        return self

    # -- the model's interface -----------------------------------------------------------

    async def stream(self, system: list[dict], messages: list[dict], tools: list[dict],
                     max_tokens: int = 1024) -> AsyncIterator[LLMEvent]:
        self.requests.append(copy.deepcopy({"system": system, "messages": messages, "tools": tools}))
        if not self.scripts:
            raise AssertionError(f"FakeLLM: request {len(self.requests)} has no scripted response")
        script = self.scripts.pop(0)
        yield LLMEvent("usage", usage={**script.usage, "output_tokens": 1})  # as message_start reports it
        for piece in script.pieces:
            yield LLMEvent("text", text=piece)
        if script.error is not None:
            raise script.error
        for call in script.calls:
            yield call
        yield LLMEvent("stop", stop_reason="tool_use" if script.calls else "end_turn", usage=dict(script.usage))

    async def aclose(self) -> None:
        self.closed = True
