"""The events of a chat turn: what `run_turn` yields, one dataclass each.

The HTTP API streams every event as one Server-Sent Event, `data: <event.to_json()>`; the chat window
(state/chat.py through chat/window.py) turns the same events into what it shows. This module is the one
description of that format:

    text              {"type": "text", "text"}                          a piece of the answer
    tool              {"type": "tool", "name", "input"}                 the model used a tool
    sources           {"type": "sources", "sources": [{"ref", "slug", "label", "passage", "url"}]}
                                                                        the snippets [ref:N] may cite; before any text
    citation          {"type": "citation", "ref", "slug", "label", "passage", "url"}
                                                                        a [ref:N] that matches a snippet of this turn;
                                                                        url = /topics/<slug>#<passage>
    delta             {"type": "delta", "delta", "notes"}               a valid proposed graph edit, for the user's yes
    delta_rejected    {"type": "delta_rejected", "message"}             a proposed edit that could not be used
    confirm_required  {"type": "confirm_required", "id", "tool", "input"}
                                                                        a high-risk external tool waits for a yes/no
    error             {"type": "error", "kind", "message", "retryable"} the turn failed (text sent before it stays)
    done              {"type": "done", "offline", "mode_used", "rag_snippets", "dropped", "stale_refs", "usage",
                       "turn_id", "grounded"}                           the last event of a turn that ended;
                                                                        grounded = the KB had something relevant
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class _Event:
    type: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The event as the HTTP API sends it: {"type": ..., **fields}."""
        return {"type": self.type, **{f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Source:
    """A snippet of this turn that the answer may cite as [ref:N]; url opens the topic at the passage."""

    ref: int
    slug: str
    label: str
    passage: str = ""
    url: str = ""


@dataclass(frozen=True)
class Text(_Event):
    type: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True)
class ToolUsed(_Event):
    type: ClassVar[str] = "tool"
    name: str
    input: Any


@dataclass(frozen=True)
class Sources(_Event):
    type: ClassVar[str] = "sources"
    sources: tuple[Source, ...]


@dataclass(frozen=True)
class Citation(_Event):
    type: ClassVar[str] = "citation"
    ref: int
    slug: str
    label: str
    passage: str = ""
    url: str = ""


@dataclass(frozen=True)
class DeltaProposed(_Event):
    type: ClassVar[str] = "delta"
    delta: dict
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeltaRejected(_Event):
    type: ClassVar[str] = "delta_rejected"
    message: str


@dataclass(frozen=True)
class ConfirmRequired(_Event):
    type: ClassVar[str] = "confirm_required"
    id: str
    tool: str
    input: Any


@dataclass(frozen=True)
class Error(_Event):
    type: ClassVar[str] = "error"
    kind: str
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class Done(_Event):
    type: ClassVar[str] = "done"
    offline: bool
    mode_used: str
    rag_snippets: bool = True
    dropped: int = 0
    stale_refs: list[int] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    turn_id: str = ""
    grounded: bool = True  # retrieval found something relevant (core/relevance.py); false: "niets gevonden"


ChatEvent = Text | ToolUsed | Sources | Citation | DeltaProposed | DeltaRejected | ConfirmRequired | Error | Done
EVENT_TYPES: dict[str, type] = {cls.type: cls for cls in (Text, ToolUsed, Sources, Citation, DeltaProposed,
                                                          DeltaRejected, ConfirmRequired, Error, Done)}
