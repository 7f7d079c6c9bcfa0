"""The tool registry: every tool the model may call, one entry each (spec + handler), and the one
place a call is dispatched.

A turn offers the model only the tools of the user's resolved capabilities (`offered`), and
`dispatch` refuses any name that was not offered in that turn, whatever the model sends. Handlers
get one `TurnContext` (who, which tenant, the capabilities, the deps, the snippets so far) and
return a `ToolResult`: the text the model reads, and events for the user (a proposed edit, say).
Providers (MCP, later) add entries at offer time without touching the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from r42_app.chat import events
from r42_app.chat.external_runtime import ExternalRuntime
from r42_app.core.delta import Rejected, validate_delta
from r42_app.core.fence import fence, one_line
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.injection import detect_injection_markers
from r42_app.core.kb import Relation, Topic
from r42_app.core.messages import msg
from r42_app.core.retrieval import Snippet, TenantIndex, render_snippets, visible_topic
from r42_app.core.tools import (
    BUILTIN_TOOLS,
    KB_SEARCH_TOOL,
    LOOKUP_TOPIC,
    PROPOSE_GRAPH_DELTA,
    Input,
    KbSearchInput,
    LookupTopicInput,
    ToolInputError,
    ToolSpec,
    parse_input,
)
from r42_app.services.retrieval import Retriever, SearchResult
from r42_app.services.store.kb_store import KBStore

log = logging.getLogger(__name__)


class ToolDeps(Protocol):
    """What the tools read of the turn's dependencies (chat.turn.ChatDeps has it all)."""

    kb: KBStore
    retriever: Retriever
    external: ExternalRuntime | None  # None when external tools are off


async def _discard(_event: events.ChatEvent) -> None:
    return None


@dataclass
class TurnContext:
    """One turn, as every tool handler sees it."""

    user: SignedInUser
    tenant: Tenant
    capabilities: frozenset[str]
    deps: ToolDeps
    snippets: list[Snippet] = field(default_factory=list)
    emit: Callable[[events.ChatEvent], Awaitable[None]] = _discard  # stream an event while a tool runs


@dataclass
class ToolResult:
    content: str
    events: list[events.ChatEvent] = field(default_factory=list)  # streamed to the user after the `tool` event
    is_error: bool = False


Handler = Callable[[TurnContext, dict[str, Any]], Awaitable[ToolResult]]


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    handler: Handler

    @property
    def name(self) -> str:
        return self.spec.name


def unavailable(name: str) -> ToolResult:
    return ToolResult(f"The tool {name!r} is not available in this conversation. Do not call it again; "
                      "answer without it, and tell the user if that means you cannot help with this.", is_error=True)


class ToolRegistry:
    """Tools by name. Register built-ins once; providers are asked for their tools each time a turn
    chooses what to offer (so a reconnected MCP server's tools appear without a restart)."""

    def __init__(self, tools: Iterable[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        self._providers: list[Callable[[], Iterable[Tool]]] = []
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def add_provider(self, provider: Callable[[], Iterable[Tool]]) -> None:
        self._providers.append(provider)

    def all(self) -> list[Tool]:
        tools = dict(self._tools)
        for provider in self._providers:
            for tool in provider():
                tools.setdefault(tool.name, tool)  # a built-in name always wins
        return list(tools.values())

    def offered(self, capabilities: Iterable[str]) -> list[Tool]:
        """The tools of these capabilities, in registration order."""
        allowed = set(capabilities)
        return [t for t in self.all() if t.spec.capability in allowed]

    async def dispatch(self, ctx: TurnContext, name: str, tool_input: Any, offered: dict[str, Tool]) -> ToolResult:
        """Run a tool the model called, if it was offered in this turn; otherwise tell the model it is
        unavailable (and log it: a model asking for a tool it was not given is worth knowing)."""
        tool = offered.get(name)
        if tool is None:
            log.warning("refused tool %r for user %s: not offered in this turn", name, ctx.user.id)
            return unavailable(name)
        if not isinstance(tool_input, dict):
            return ToolResult(f"The input of {name} must be a JSON object.", is_error=True)
        try:
            return await tool.handler(ctx, tool_input)
        except Exception:  # a failing tool is the model's problem to explain, not the turn's end
            log.exception("tool %s failed for user %s", name, ctx.user.id)
            return ToolResult(f"The tool {name} failed; answer without it.", is_error=True)


# -- the built-in tools --------------------------------------------------------------------------


def typed(model: type[Input]) -> Callable[[Callable[[TurnContext, Input], Awaitable[ToolResult]]], Handler]:
    """A handler of a built-in tool, given its input as the tool's model (core/tools.py); an input of another shape
    goes back to the model with what is wrong, and the handler does not run."""
    def wrap(handler: Callable[[TurnContext, Input], Awaitable[ToolResult]]) -> Handler:
        async def run(ctx: TurnContext, tool_input: dict[str, Any]) -> ToolResult:
            try:
                arguments = parse_input(model, tool_input)
            except ToolInputError as exc:
                return ToolResult(f"The input was not valid, so nothing was done: {exc}", is_error=True)
            return await handler(ctx, arguments)
        run.__doc__ = handler.__doc__
        return run
    return wrap


@typed(LookupTopicInput)
async def lookup_topic(ctx: TurnContext, arguments: LookupTopicInput) -> ToolResult:
    """One topic in full, with its relations, as a snippet block."""
    slug = arguments.id.strip()
    topic = await asyncio.to_thread(ctx.deps.kb.topic, ctx.tenant, slug) if slug else None
    if topic is None:
        return ToolResult(f"No topic with id {slug!r} exists in this knowledge base.")
    relations = await asyncio.to_thread(ctx.deps.kb.relations_of, ctx.tenant, slug)
    return ToolResult(await asyncio.to_thread(_topic_block, topic, relations))  # CPU: off the event loop


def _topic_block(topic: Topic, relations: Sequence[Relation]) -> str:
    """A looked-up topic as the model reads it: what a reader of the topic page sees, fenced, with its markers."""
    topic = visible_topic(topic)
    lines = [f"id: {topic.slug}", f"label: {one_line(topic.label)}", f"type: {topic.type}",
             f"description: {one_line(topic.description)}", "content:", topic.content or "(none)"]
    if relations:
        lines.append("relations:")
        lines += [f"- {r.source} --{r.type}--> {r.target}" for r in relations]
    text = "\n".join(lines)
    return fence(text, topic.slug, topic.label, detect_injection_markers(text))


@typed(KbSearchInput)
async def kb_search(ctx: TurnContext, arguments: KbSearchInput) -> ToolResult:
    """A new search; its hits become snippets with the next [ref:N] numbers of this turn."""
    result = await asyncio.to_thread(ctx.deps.retriever.kb_search, ctx.tenant, arguments.query, arguments.mode, 5)
    index = await asyncio.to_thread(ctx.deps.retriever.index, ctx.tenant)
    new, text = await asyncio.to_thread(_search_block, result, index, len(ctx.snippets) + 1)  # CPU: off the loop
    ctx.snippets.extend(new)
    return ToolResult(text if new else "No topic matches this search.")


def _search_block(result: SearchResult, index: TenantIndex, start: int) -> tuple[list[Snippet], str]:
    """A search's hits as snippets numbered from `start` (their markers read) and their fenced text."""
    new: list[Snippet] = result.snippets(index, start=start)
    return new, render_snippets(new)


async def propose_graph_delta(ctx: TurnContext, tool_input: dict[str, Any]) -> ToolResult:
    """Check a proposed edit; a valid one goes to the user as a `delta` event to confirm."""
    checked = validate_delta(tool_input, await asyncio.to_thread(ctx.deps.retriever.index, ctx.tenant))
    if isinstance(checked, Rejected):
        return ToolResult(f"The edit was rejected and not shown to the user: {checked.message}",
                          [events.DeltaRejected(msg("delta.unusable"))])
    return ToolResult("The edit is shown to the user, who decides whether to apply it (admins) or to suggest it to "
                      "the admins (learners). Do not claim it has been applied.",
                      [events.DeltaProposed(checked.as_dict(), tuple(checked.notes))])


HANDLERS: dict[str, Handler] = {LOOKUP_TOPIC.name: lookup_topic, KB_SEARCH_TOOL.name: kb_search,
                                PROPOSE_GRAPH_DELTA.name: propose_graph_delta}


def builtin_registry() -> ToolRegistry:
    """A registry with R42's own tools."""
    return ToolRegistry(Tool(spec, HANDLERS[spec.name]) for spec in BUILTIN_TOOLS)
