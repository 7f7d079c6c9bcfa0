"""One chat turn: guard -> context -> prompt -> model stream -> tools -> citations.

`run_turn` is an async generator of plain-dict events, the same ones the HTTP API streams:

    {"type": "text", "text": ...}                      a piece of the answer
    {"type": "tool", "name": ..., "input": ...}        the model used a tool
    {"type": "citation", "ref", "slug", "label", "url"} a [ref:N] that matches a snippet of this turn
    {"type": "delta", "delta", "notes"}                a valid propose_graph_delta, for the user to confirm
    {"type": "delta_rejected", "message"}              a proposed edit that could not be used
    {"type": "error", "kind", "message", "retryable"}  the turn failed (text sent before it stays)
    {"type": "done", "offline", "mode_used", "dropped", "stale_refs", "usage"}
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, AsyncIterator, Protocol

from r42_app.core.chat import (
    MAX_TOOL_ROUNDS,
    ChatInputError,
    resolve_citations,
    system_blocks,
    tool_definitions,
    trim_history,
    validate_messages,
    offline_answer,
)
from r42_app.core.delta import Rejected, validate_delta
from r42_app.core.retrieval import Snippet, make_snippet, render_snippets
from r42_app.services.auth import SignedInUser
from r42_app.services.kb_store import KBStore, Tenant
from r42_app.services.llm import LLMError, LLMEvent
from r42_app.services.retrieval import MODES, Retriever

log = logging.getLogger(__name__)


class ChatRefused(Exception):
    """The guard refused the turn; `kind` and `message` go to the user (the API maps kind to a status)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


class QuizLock(Protocol):
    def active(self, user_id: str) -> bool: ...


QUIZ_MESSAGE = ("Je bent bezig met een toets. R42 is weer beschikbaar zodra je de toets afrondt of verlaat.")


class LLM(Protocol):
    def stream(self, system: list[dict], messages: list[dict], tools: list[dict]) -> AsyncIterator[LLMEvent]: ...


@dataclass
class ChatDeps:
    """What a turn needs; `llm` None means offline (no ANTHROPIC_API_KEY)."""

    retriever: Retriever
    kb: KBStore
    llm: LLM | None
    quiz: QuizLock | None = None


def guard(user: SignedInUser | None, quiz: QuizLock | None = None) -> None:
    """Who may chat now: signed in, in a tenant, no active quiz (the server's `quiz_sessions` row,
    whatever the browser's flag says). Blocking I/O: call it in a thread. (Quota and capabilities
    plug in here.)"""
    if user is None:
        raise ChatRefused("unauthenticated", "Meld je aan om R42 te gebruiken.")
    if not user.tenant_id:
        raise ChatRefused("forbidden", "Je account hoort bij geen organisatie.")
    if quiz is not None and quiz.active(user.id):
        raise ChatRefused("quiz_active", QUIZ_MESSAGE)


def select_tools(user: SignedInUser) -> list[str]:
    """The tools this user's model may call. (The capability resolver replaces this body later.)"""
    return ["lookup_topic", "kb_search", "propose_graph_delta"]


def _tenant(user: SignedInUser) -> Tenant:
    return user.tenant


async def _lookup_topic(deps: ChatDeps, tenant: Tenant, tool_input: dict) -> str:
    slug = str(tool_input.get("id", "")).strip()
    topic = await asyncio.to_thread(deps.kb.topic, tenant, slug) if slug else None
    if topic is None:
        return f"No topic with id {slug!r} exists in this knowledge base."
    relations = await asyncio.to_thread(deps.kb.relations_of, tenant, slug)
    lines = [f"id: {topic.slug}", f"label: {topic.label}", f"type: {topic.type}", f"description: {topic.description}",
             "content:", topic.content or "(none)"]
    if relations:
        lines.append("relations:")
        lines += [f"- {r.source} --{r.type}--> {r.target}" for r in relations]
    return "---SNIPPET START---\n" + "\n".join(lines).replace("---SNIPPET", "--- SNIPPET") + "\n---SNIPPET END---"


async def _kb_search_tool(deps: ChatDeps, tenant: Tenant, tool_input: dict, snippets: list[Snippet]) -> str:
    query = str(tool_input.get("query", ""))[:2000]
    mode = tool_input.get("mode") if tool_input.get("mode") in MODES else "hybrid"
    result = await asyncio.to_thread(deps.retriever.kb_search, tenant, query, mode, 5)
    index = await asyncio.to_thread(deps.retriever.index, tenant)
    new = []
    for hit in result.hits:
        topic = index.topics[index.by_slug[hit.slug]]
        new.append(make_snippet(len(snippets) + len(new) + 1, topic, hit.text, hit.score))
    snippets.extend(new)
    return render_snippets(new) if new else "No topic matches this search."


async def run_turn(user: SignedInUser | None, raw_messages: Any, deps: ChatDeps,
                   mode: str = "hybrid") -> AsyncIterator[dict]:
    """Answer the last user message. Raises ChatInputError / ChatRefused before anything streams."""
    messages = validate_messages(raw_messages)
    guard(user)  # signed in and in a tenant (no I/O)
    if mode not in MODES:
        raise ChatInputError(f"mode must be one of {', '.join(MODES)}")
    assert user is not None
    tenant = _tenant(user)
    kept, dropped = trim_history(messages)
    question = messages[-1].content

    async def ground():
        context = await asyncio.to_thread(deps.retriever.build_kb_context, tenant, question)
        result = await asyncio.to_thread(deps.retriever.kb_search, tenant, question, mode, 5)
        return context, result, await asyncio.to_thread(deps.retriever.index, tenant)

    # The quiz lock (a PocketBase query) is checked while the context is built; nothing streams,
    # and the model is not called, before it has passed.
    checked, grounded = await asyncio.gather(asyncio.to_thread(guard, user, deps.quiz), ground(),
                                             return_exceptions=True)
    for outcome in (checked, grounded):  # a refusal wins over a grounding failure
        if isinstance(outcome, BaseException):
            raise outcome
    context, result, index = grounded
    snippets = result.snippets(index)
    suspect = [s.ref for s in snippets if s.suspect]
    if suspect:
        log.warning("injection markers in snippets %s for tenant %s", suspect, tenant.slug)
    usage: dict[str, int] = {}
    answer = ""

    if deps.llm is None:
        answer = offline_answer(question, snippets)
        yield {"type": "text", "text": answer}
    else:
        system = system_blocks(context.text, render_snippets(snippets), user.name, user.is_admin)
        tools = tool_definitions(select_tools(user))
        convo: list[dict] = [{"role": m.role, "content": m.content} for m in kept]
        try:
            for round_no in range(MAX_TOOL_ROUNDS + 1):
                round_text, calls = "", []
                offered = tools if round_no < MAX_TOOL_ROUNDS else []  # the last round must answer
                async for event in deps.llm.stream(system, convo, offered):
                    if event.kind == "text":
                        round_text += event.text
                        answer += event.text
                        yield {"type": "text", "text": event.text}
                    elif event.kind == "tool_use":
                        calls.append(event)
                    elif event.kind == "stop":
                        for key, value in event.usage.items():
                            usage[key] = usage.get(key, 0) + value
                if not calls or not offered:  # tools that were not offered are never run
                    break
                content: list[dict] = [{"type": "text", "text": round_text}] if round_text else []
                content += [{"type": "tool_use", "id": c.tool_id, "name": c.tool_name, "input": c.tool_input} for c in calls]
                convo.append({"role": "assistant", "content": content})
                results = []
                for call in calls:
                    yield {"type": "tool", "name": call.tool_name, "input": call.tool_input}
                    if call.tool_name == "lookup_topic":
                        output = await _lookup_topic(deps, tenant, call.tool_input)
                    elif call.tool_name == "kb_search":
                        output = await _kb_search_tool(deps, tenant, call.tool_input, snippets)
                    elif call.tool_name == "propose_graph_delta":
                        checked = validate_delta(call.tool_input, await asyncio.to_thread(deps.retriever.index, tenant))
                        if isinstance(checked, Rejected):
                            output = f"The edit was rejected and not shown to the user: {checked.message}"
                            yield {"type": "delta_rejected",
                                   "message": f"R42 proposed an edit that could not be used: {checked.message}"}
                        else:
                            output = ("The edit is shown to the user, who decides whether to apply it (admins) or to "
                                      "suggest it to the admins (learners). Do not claim it has been applied.")
                            yield {"type": "delta", "delta": checked.as_dict(), "notes": list(checked.notes)}
                    else:
                        output = f"Unknown tool {call.tool_name!r}."
                    results.append({"type": "tool_result", "tool_use_id": call.tool_id, "content": output})
                convo.append({"role": "user", "content": results})
        except LLMError as exc:
            log.warning("model call failed (%s): %s", exc.kind, exc)
            yield {"type": "error", "kind": exc.kind, "message": exc.message, "retryable": exc.retryable}
            return

    citations, stale = resolve_citations(answer, snippets)
    for c in citations:
        yield {"type": "citation", "ref": c.ref, "slug": c.slug, "label": c.label, "url": f"/topics/{c.slug}"}
    if stale:
        log.warning("answer cited %d reference(s) that match no snippet: %s", len(stale), stale)
    yield {"type": "done", "offline": deps.llm is None, "mode_used": result.mode_used, "dropped": dropped,
           "stale_refs": stale, "usage": usage}
