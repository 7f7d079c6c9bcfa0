"""One chat turn: guard -> context -> prompt -> model stream -> tools -> citations.

`run_turn` is an async generator of the typed events of chat/events.py (the HTTP API streams each as
`event.to_json()`; the window translates them in chat/window.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from r42_app.chat import events
from r42_app.chat.coalesce import coalesce_text
from r42_app.chat.external_runtime import ExternalRuntime
from r42_app.chat.rewrite import QuestionRewriter
from r42_app.chat.tools import ToolRegistry, TurnContext, builtin_registry
from r42_app.core.capabilities import DEFAULT_CAPABILITIES, QA_HELP
from r42_app.core.chat import (
    MAX_TOOL_ROUNDS,
    ChatInputError,
    ChatMessage,
    offline_answer,
    resolve_citations,
    system_blocks,
    trim_history,
    validate_messages,
)
from r42_app.core.conversation import user_questions
from r42_app.core.costs import QuotaExceeded, Round, Usage, assert_tenant_ai_credit_access
from r42_app.core.delta import ValidDelta
from r42_app.core.errors import UserError
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.messages import set_language
from r42_app.core.questions import QuestionEntry
from r42_app.core.ratelimit import Limiter
from r42_app.core.retrieval import Snippet, TenantIndex, render_snippets
from r42_app.services.adapters.llm import LLMError, LLMEvent
from r42_app.services.retrieval import MODES, Grounding, Retriever, SearchResult
from r42_app.services.store.access import GuardReading
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import PBError

log = logging.getLogger(__name__)


class ChatRefused(UserError):
    """The guard refused the turn: `kind` (the API maps it to a status) and `user_message` go to the user. The
    code is `chat.<kind>` unless another is given (no `data_write`, out of credit)."""

    code_prefix = "chat."

    def __init__(self, kind: str, code: str = "", retry_after: float = 0.0, details: dict | None = None):
        super().__init__(code or self.code_prefix + kind, f"turn refused: {kind}")
        self.kind = kind
        self.retry_after = retry_after
        self.details = details or {}  # quota_exceeded: {"reason", "metadata"}


class TurnGuards(Protocol):
    """What the guard reads of PocketBase for a turn (services/store/access.py AccessStore.read_guards: one request,
    shared with the turns that arrive together): raises PBError, a 401 with a `reason` when the session no longer
    holds."""

    async def read_guards(self, user: SignedInUser, token: str = "") -> GuardReading: ...


class SuggestionSink(Protocol):
    """Where a learner's confirmed edit goes (services/store/suggestions.py SuggestionStore)."""

    def append_suggestion(self, tenant: Tenant, user_id: str, delta: ValidDelta) -> Any: ...


class CostSink(Protocol):
    """Where a turn's AI cost goes (services/store/costs.py CostRecorder)."""

    def publish(self, turn_id: str, tenant_id: str, user_id: str, model: str, rounds: list[Round]) -> None:
        """From the event loop, without waiting: queued and written with the turns that end together."""

    def record(self, turn_id: str, tenant_id: str, user_id: str, model: str, rounds: list[Round]) -> Any:
        """Blocking (a worker thread, or no event loop): written before it returns."""


class QuestionSink(Protocol):
    """The question log (services/store/questions.py QuestionLog)."""

    def user_key(self, tenant_id: str, user_id: str) -> str: ...

    def queue(self, entry: QuestionEntry) -> None: ...


class LLM(Protocol):
    model: str  # what the turn's cost events are priced by

    def stream(self, system: list[dict], messages: list[dict], tools: list[dict]) -> AsyncIterator[LLMEvent]: ...


@dataclass
class ChatDeps:
    """What a turn needs; `llm` None means offline (no ANTHROPIC_API_KEY). Without `guards` every user has the
    new-tenant default and no quiz (tests that are not about the guard); a None sink is not used."""

    retriever: Retriever
    kb: KBStore
    llm: LLM | None
    guards: TurnGuards | None = None  # R42 on, capabilities, credit, quiz and session, read per turn
    limiter: Limiter | None = None
    tools: ToolRegistry = field(default_factory=builtin_registry)
    suggestions: SuggestionSink | None = None  # where a learner's confirmed edit goes
    costs: CostSink | None = None  # the turn's cost events (None: not tracked)
    upgrade_url: str = "/admin/costs"  # where a tenant out of credits can buy more (in the 402)
    external: ExternalRuntime | None = None  # audit, rate limit and confirmations of external (MCP) tool calls
    rag_snippets: bool = True  # False: R42_RAG_SNIPPETS_ENABLED=false, no search snippets in the model's prompt
    questions: QuestionSink | None = None  # each turn's question, pseudonymous (None: not logged)
    rewriter: QuestionRewriter | None = None  # R42_QUESTION_REWRITE: the fast tier rewrites follow-ups first


class _OneAtATime:
    """Per key, one holder at a time, in arrival order; a key is forgotten when nobody holds or awaits it.

    The grounding of a turn (the query's embedding and the search, ~60% of a turn's CPU) runs one at a time per
    user in a worker: a user who sends their whole burst at once (R42_CHAT_BURST, 4 by default, as the first
    requests of a flood do) is answered in turn, and takes one core's share, not the machine, from the other
    users' chats (bench/bench_load.py's flood). The model's answers still stream side by side."""

    @dataclass
    class _Holders:
        lock: asyncio.Lock = field(default_factory=asyncio.Lock)
        count: int = 0  # holders and waiters

    def __init__(self) -> None:
        self._held: dict[tuple[int, str], _OneAtATime._Holders] = {}  # (event loop, key) -> its lock

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        slot = (id(asyncio.get_running_loop()), key)
        entry = self._held.get(slot)
        if entry is None:
            entry = self._held[slot] = self._Holders()
        entry.count += 1
        lock = entry.lock
        held = False
        try:
            try:  # fairness, not safety: a turn stuck with the lock (a hung search) holds the others up to a limit
                async with asyncio.timeout(HOLD_WAIT_S):
                    await lock.acquire()
                held = True
            except TimeoutError:
                log.warning("a turn of user %s went on without waiting for the one before it", key)
            yield
        finally:
            if held:
                lock.release()
            entry.count -= 1
            if entry.count == 0:
                self._held.pop(slot, None)


HOLD_WAIT_S = 20.0  # longer than any grounding; past it, a user's next turn goes on beside the stuck one
_GROUNDING = _OneAtATime()
one_user_at_a_time = _GROUNDING.hold  # the API's guard takes it too: the guard and the grounding are a turn's CPU


@dataclass(frozen=True)
class TurnPermit:
    """The guard's yes: who asks, and what R42 may do for them in this turn."""

    user: SignedInUser
    capabilities: frozenset[str]
    log_questions: bool = True  # the tenant keeps a question log (its switch, read by the guard)


async def check_turn(user: SignedInUser | None, deps: ChatDeps, need: str = QA_HELP,
                     rate_limit: bool = True, token: str = "") -> TurnPermit:
    """The guard, once per turn, for the window and the API alike: signed in, in a tenant, R42 on for
    the tenant, the `need`ed capability resolved for this user now, AI credit left for a model call
    (`assert_tenant_ai_credit_access`; not offline), no active quiz (the server's row, whatever the
    browser says), and within the rate limit (taken first, given back when the turn is refused otherwise).
    The session too (issue 44): the user still in that tenant with that role, and the session's `token` (when
    given) valid and not signed out, as PocketBase says now, whatever a cache of the token check still holds
    (`unauthenticated`, with the code `chat.session_changed` or `auth.session_ended`).
    Raises ChatRefused with a typed kind. Its PocketBase queries run at the same time, off the loop."""
    if user is None:
        raise ChatRefused("unauthenticated")
    if not user.tenant_id:
        raise ChatRefused("forbidden")
    # The rate limit comes first and takes its token at once: 300 requests arriving together must not
    # all pass a peek and each run the PocketBase lookups below. A turn refused later gets it back.
    limiter = deps.limiter if rate_limit else None
    if limiter is not None:
        wait = await limiter.check(user.id)
        if wait > 0:
            raise ChatRefused("rate_limited", retry_after=wait)
    try:
        capabilities, log_questions = await _guard(user, deps, need, token)
    except BaseException:
        if limiter is not None:
            await give_back(user, deps)
        raise
    return TurnPermit(user, frozenset(capabilities), log_questions)


async def give_back(user: SignedInUser, deps: ChatDeps) -> None:
    """Return the rate-limit token `check_turn` took for a turn that is refused after all (it never ran)."""
    if deps.limiter is not None:
        await deps.limiter.refund(user.id)


async def _guard(user: SignedInUser, deps: ChatDeps, need: str,
                 token: str = "") -> tuple[frozenset[str] | set[str], bool]:
    """check_turn's PocketBase part: the session, R42 on, the capability, credit and no quiz (raises ChatRefused);
    the capabilities and the tenant's question-log switch."""
    try:
        reading = await deps.guards.read_guards(user, token) if deps.guards is not None else None
    except PBError as exc:
        if exc.status == 401 and exc.data.get("reason") == "tenant_disabled":  # `r42 tenant disable` (issue 46)
            log.info("turn refused for user %s: tenant %s is disabled", user.id, user.tenant_slug)
            raise ChatRefused("tenant_disabled", code="auth.tenant_disabled") from exc
        if exc.status == 401:  # the session no longer holds: signed out, or moved to another tenant or role
            signed_out = exc.data.get("reason") == "signed_out"
            log.info("turn refused for user %s: session %s", user.id, "signed out" if signed_out else "changed")
            raise ChatRefused("unauthenticated", code="auth.session_ended" if signed_out
                              else "chat.session_changed") from exc
        log.error("turn guard could not reach PocketBase: %s", exc)
        raise ChatRefused("unavailable") from exc
    capabilities = DEFAULT_CAPABILITIES
    if reading is not None:
        if not reading.chatbot.enabled:
            raise ChatRefused("chatbot_disabled")
        capabilities = reading.resolution.effective
    if need not in capabilities:
        raise ChatRefused("capability_denied", code="" if need == QA_HELP else "chat.data_write_denied")
    if reading is not None and need == QA_HELP and deps.llm is not None:  # offline answers cost nothing
        try:
            assert_tenant_ai_credit_access(reading.chatbot.credits, minimum_credits=1, upgrade_url=deps.upgrade_url)
        except QuotaExceeded as exc:
            raise ChatRefused("quota_exceeded", code=exc.code,
                              details={"reason": exc.reason, "metadata": exc.metadata}) from exc
    if reading is not None and reading.quiz_active:
        raise ChatRefused("quiz_active")
    return capabilities, reading is None or reading.chatbot.question_log


def _snippets_of(result: SearchResult, index: TenantIndex) -> tuple[list[Snippet], str]:
    """A turn's snippets, their injection markers read, and their fenced text for the prompt."""
    snippets = result.snippets(index)
    return snippets, render_snippets(snippets)


@dataclass
class Grounded:
    """What the knowledge base says on a turn's question (in its conversation): the context, the search and its
    snippets, in the tenant's index of this moment."""

    grounding: Grounding
    index: TenantIndex
    snippets: list[Snippet]
    snippets_text: str  # the snippets fenced for the prompt

    @property
    def relevant(self) -> bool:
        """Does the KB have anything on this question (core/relevance.py)."""
        return self.grounding.result.relevance.grounded


@dataclass
class Tally:
    """What a turn's model rounds produced: the answer's text, each round's usage, the total, and whether the model
    failed (the turn then ended with an error event)."""

    answer: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    rounds: list[Round] = field(default_factory=list)
    failed: bool = False


async def run_turn(user: SignedInUser | None, raw_messages: Any, deps: ChatDeps, mode: str = "hybrid",
                   permit: TurnPermit | None = None, channel: str = "window",
                   token: str = "") -> AsyncGenerator[events.ChatEvent, None]:
    """Answer the last user message. Raises ChatInputError / ChatRefused before anything streams.
    Callers that already ran `check_turn` (the API, to answer with a status code) pass its permit;
    otherwise the guard runs here, alongside grounding (nothing streams and no model is called before
    it has passed). A turn that is answered (or whose model failed) leaves its question in the question
    log, unless the tenant switched it off; `channel` is "window" or "api"; `token` is the session's (the guard
    checks it). Its steps: `ground_turn`, then `offline_answer_of` or `model_rounds`, then `finish_turn`."""
    messages = validate_messages(raw_messages)
    if mode not in MODES:
        raise ChatInputError(f"mode must be one of {', '.join(MODES)}")
    if user is None or not user.tenant_id:
        await check_turn(user, deps)  # raises: no PocketBase query needed to refuse these
    assert user is not None
    set_language(user.language)  # the offline answer's sentences, the refusals and notices: in the person's language
    kept, dropped = trim_history(messages)
    turn_id = uuid.uuid4().hex
    permit, grounded = await ground_turn(user, messages, mode, deps, permit, token, turn_id)
    if grounded.snippets and (deps.rag_snippets or deps.llm is None):  # what [ref:N] will point at, before any text
        yield events.Sources(tuple(events.Source(s.ref, s.slug, s.label, s.anchor, s.url) for s in grounded.snippets))
    tally = Tally()
    if deps.llm is None:
        tally.answer = await offline_answer_of(grounded)
        yield events.Text(tally.answer)
    else:
        if not deps.rag_snippets:  # the rollback switch: the model gets the KB context and its tools only
            grounded = dataclasses.replace(grounded, snippets=[])
        async with contextlib.aclosing(model_rounds(deps.llm, deps, permit, grounded, kept, tally, turn_id)) as turn:
            async for event in turn:  # (closing the turn closes the rounds now: their cost is recorded at once)
                yield event
        if tally.failed:
            _log_question(deps, permit, grounded, channel, mode, (), turn_id)
            return
    for event in finish_turn(deps, permit, grounded, tally, channel, mode, dropped, turn_id):
        yield event


async def ground_turn(user: SignedInUser, messages: list[ChatMessage], mode: str, deps: ChatDeps,
                      permit: TurnPermit | None, token: str, turn_id: str) -> tuple[TurnPermit, Grounded]:
    """The guard (unless the caller passed its permit) and the grounding of the last of the (validated) `messages`,
    side by side: a refusal wins over a grounding failure. One user's turns are grounded one at a time (see
    _OneAtATime). With `deps.rewriter` and a question that has earlier ones, the guard comes first, then the model's
    rewrite of the question (the messages as sent, not merged; chat/rewrite.py), then the grounding on it."""
    tenant = user.tenant
    questions = user_questions(messages)
    rewritten = ""
    if deps.rewriter is not None and len(questions) > 1:
        if permit is None:  # the model reads nothing of a turn the guard refuses (a quiz, no credit, no capability)
            permit = await check_turn(user, deps, token=token)
        rewritten = await deps.rewriter.standalone([(m.role, m.content) for m in messages], turn_id, user.tenant_id,
                                                   user.id)

    def search() -> tuple[Grounding, TenantIndex]:  # one thread hop, not three
        return deps.retriever.ground(tenant, questions, mode, 5, rewritten=rewritten), deps.retriever.index(tenant)

    async def ground() -> tuple[Grounding, TenantIndex]:
        async with _GROUNDING.hold(user.id):
            return await asyncio.to_thread(search)

    if permit is None:
        checked, found = await asyncio.gather(check_turn(user, deps, token=token), ground(), return_exceptions=True)
        if isinstance(checked, BaseException):
            raise checked
        if isinstance(found, BaseException):
            raise found
        permit = checked
    else:
        found = await ground()
    grounding, index = found
    # the snippets' injection markers and their fences read the knowledge base's text: CPU, off the event loop
    snippets, snippets_text = await asyncio.to_thread(_snippets_of, grounding.result, index)
    if suspect := [s.ref for s in snippets if s.suspect]:
        log.warning("injection markers in snippets %s for tenant %s", suspect, tenant.slug)
    return permit, Grounded(grounding, index, snippets, snippets_text)


async def offline_answer_of(grounded: Grounded) -> str:
    """The answer without a model (`offline_answer_for`). Reading the texts is CPU: off the event loop."""
    return await asyncio.to_thread(offline_answer_for, grounded.grounding, grounded.index, grounded.snippets)


def offline_answer_for(grounding: Grounding, index: TenantIndex, snippets: list[Snippet]) -> str:
    """The topics' descriptions and the snippets' passages that fit the question as understood (the chip of a
    sentence opens the topic at the snippet's best passage). Blocking: CPU."""
    texts = {s.slug: f"{t.description}\n\n{s.text}" for s in snippets
             if (t := index.topics[index.by_slug[s.slug]] if s.slug in index.by_slug else None) is not None}
    relevance = grounding.result.relevance
    return offline_answer(grounding.understood.grounding, snippets, texts=texts, grounded=relevance.grounded,
                          near=relevance.near)


async def model_rounds(llm: LLM, deps: ChatDeps, permit: TurnPermit, grounded: Grounded, kept: list[ChatMessage],
                       tally: Tally, turn_id: str) -> AsyncGenerator[events.ChatEvent, None]:
    """The model's rounds: its text streamed in ~30 ms chunks, the tools it calls run (at most MAX_TOOL_ROUNDS
    rounds with tools; the last must answer), into `tally`. A failed model call ends with an Error event and
    `tally.failed`. Whatever happens, what was spent is recorded (also when the user stops the answer)."""
    user, snippets = permit.user, grounded.snippets
    pending_events: asyncio.Queue = asyncio.Queue()  # what a running tool streams (a confirmation card)
    ctx = TurnContext(user, user.tenant, permit.capabilities, deps, snippets, emit=pending_events.put)
    offered = {t.name: t for t in deps.tools.offered(permit.capabilities)}
    system = system_blocks(grounded.grounding.context.text, grounded.snippets_text if snippets else "", user.name,
                           user.is_admin, list(offered), snippets_enabled=deps.rag_snippets,
                           grounded=grounded.relevant, language=user.language)
    definitions = [t.spec.definition() for t in offered.values()]
    convo: list[dict] = [{"role": m.role, "content": m.content} for m in kept]
    spent: Usage | None = None  # the round in progress, as far as the model has reported it
    try:
        for round_no in range(MAX_TOOL_ROUNDS + 1):
            round_text, calls, spent = "", [], Usage()
            this_round = definitions if round_no < MAX_TOOL_ROUNDS else []  # the last round must answer
            async for event in coalesce_text(llm.stream(system, convo, this_round)):
                if event.kind == "text":
                    round_text += event.text
                    tally.answer += event.text
                    yield events.Text(event.text)
                elif event.kind == "usage":
                    spent = Usage.from_sdk(event.usage)
                elif event.kind == "tool_use":
                    calls.append(event)
                elif event.kind == "stop":
                    spent = Usage.from_sdk(event.usage)
                    for key, value in event.usage.items():
                        tally.usage[key] = tally.usage.get(key, 0) + value
            tally.rounds.append(Round(spent, tuple(c.tool_name for c in calls)))
            spent = None
            if not calls or not this_round:  # a round offered no tools: nothing it asks for is run
                break
            content: list[dict] = [{"type": "text", "text": round_text}] if round_text else []
            content += [{"type": "tool_use", "id": c.tool_id, "name": c.tool_name, "input": c.tool_input}
                        for c in calls]
            convo.append({"role": "assistant", "content": content})
            results = []
            for call in calls:
                if call.tool_name in offered:
                    yield events.ToolUsed(call.tool_name, call.tool_input)
                running = asyncio.ensure_future(deps.tools.dispatch(ctx, call.tool_name, call.tool_input, offered))
                async for card in _while_running(running, pending_events):
                    yield card
                outcome = running.result()
                for tool_event in outcome.events:
                    yield tool_event
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.tool_id,
                                         "content": outcome.content}
                if outcome.is_error:
                    block["is_error"] = True
                results.append(block)
            convo.append({"role": "user", "content": results})
    except LLMError as exc:
        log.warning("model call failed (%s): %s", exc.kind, exc)
        tally.failed = True
        yield events.Error(exc.kind, exc.user_message, exc.retryable)
    finally:  # also when the model failed or the user stopped the answer: what was spent is recorded
        if spent is not None and spent.total:
            tally.rounds.append(Round(spent))
        _record_cost(deps, turn_id, user, tally.rounds)


def finish_turn(deps: ChatDeps, permit: TurnPermit, grounded: Grounded, tally: Tally, channel: str, mode: str,
                dropped: int, turn_id: str) -> Iterator[events.ChatEvent]:
    """The answer's citations (its [ref:N] that match a snippet), the question log's row, and `done`."""
    citations, stale = resolve_citations(tally.answer, grounded.snippets)
    for c in citations:
        yield events.Citation(c.ref, c.slug, c.label, c.anchor, c.url)
    if stale:
        log.warning("answer cited %d reference(s) that match no snippet: %s", len(stale), stale)
    _log_question(deps, permit, grounded, channel, mode, [c.slug for c in citations], turn_id)
    yield events.Done(offline=deps.llm is None, mode_used=grounded.grounding.result.mode_used,
                      rag_snippets=deps.rag_snippets, dropped=dropped, stale_refs=list(stale), usage=tally.usage,
                      turn_id=turn_id, grounded=grounded.relevant)


async def _while_running(task: asyncio.Future, queue: asyncio.Queue) -> AsyncIterator[events.ChatEvent]:
    """The events a tool streams while it runs (a high-risk tool's confirm_required), until it is done.
    Closing the turn meanwhile (the user stops it) cancels the tool."""
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            return
    finally:
        if not task.done():
            task.cancel()


def _log_question(deps: ChatDeps, permit: TurnPermit, grounded: Grounded, channel: str, mode: str,
                  cited: Any, turn_id: str) -> None:
    """Queue the turn's row of the question log (core/questions.py); it is written with the others of that second."""
    if deps.questions is None or not permit.log_questions:
        return
    user, result, understood = permit.user, grounded.grounding.result, grounded.grounding.understood
    entry = QuestionEntry(user.tenant_id, deps.questions.user_key(user.tenant_id, user.id), understood.question,
                          channel, mode, result.mode_used, result.hits[0].score if result.hits else 0.0,
                          result.relevance.semantic, tuple(s.slug for s in grounded.snippets), tuple(cited),
                          grounded.relevant, deps.llm is None, turn_id, understood.reread)
    try:
        deps.questions.queue(entry)
    except ValueError as exc:  # a row the log cannot take never fails the answer it describes
        log.warning("question not logged: %s", exc)


def _record_cost(deps: ChatDeps, turn_id: str, user: SignedInUser, rounds: list[Round]) -> None:
    """Queue the turn's cost events without making the user wait (nor failing when the turn is being
    cancelled): published on the loop, written with the turns that end together."""
    if deps.costs is None or not rounds or deps.llm is None:
        return
    args = (turn_id, user.tenant_id, user.id, deps.llm.model, list(rounds))
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no running loop (a generator finalised outside one): record right here
        deps.costs.record(*args)
        return
    deps.costs.publish(*args)
