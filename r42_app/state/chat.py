"""ChatState: the R42 window. Thin: the turn itself is r42_app.chat.turn; the thread lives in the
browser's localStorage under `chat:thread:{userId}` and only passes through here."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import time
import uuid

import reflex as rx

from r42_app.chat.confirm import DeltaNotApplied, confirm_delta
from r42_app.chat.turn import ChatRefused, run_turn
from r42_app.container import services
from r42_app.core.capabilities import CAPABILITIES, CAPABILITY_LABELS, chat_availability
from r42_app.core.chat import MAX_MESSAGE_CHARS, REF_RE, ChatInputError
from r42_app.core.delta import describe_delta
from r42_app.core.mcp import ConfirmationError
from r42_app.core.retrieval import topic_url
from r42_app.core.thread import (
    ThreadCitation,
    ThreadMessage,
    cleared_at,
    greeting,
    merge,
    parse,
    removed_ids,
    serialise,
    storage_key,
)
from r42_app.services.runtime.liveness import HOST, STREAM_REFRESH_S
from r42_app.services.runtime.shared_state import SharedStateUnavailable
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)

RESTORE_NOTICE = "Je eerdere gesprek kon niet worden gelezen en is opnieuw begonnen."
DROPPED_NOTICE = "Oudere berichten zijn niet meegestuurd; R42 kijkt naar de laatste 12 vragen."
CUT_OFF = "De verbinding met de server werd onderbroken; dit antwoord is niet afgemaakt. Probeer het opnieuw."
# With several workers (issue 17) the tab may reconnect to another worker while the worker streaming its
# answer died: stream_check then ends the answer (services/runtime/liveness.py tells).


def worker_tag(pid: int | None = None) -> str:
    """An opaque name of a backend worker (host and pid, hashed): on the page as `data-r42-worker`, so
    operators and the multi-worker tests can tell which worker a tab is talking to."""
    return hashlib.sha1(f"{HOST}:{pid or os.getpid()}".encode()).hexdigest()[:8]


@dataclasses.dataclass
class UICitation:
    ref: int = 0
    slug: str = ""
    label: str = ""
    anchor: str = ""


@dataclasses.dataclass
class UIMessage:
    id: str = ""
    role: str = "assistant"
    content: str = ""
    status: str = "ok"
    citations: list[UICitation] = dataclasses.field(default_factory=list)
    display: str = ""
    delta: dict = dataclasses.field(default_factory=dict)
    delta_state: str = ""
    delta_lines: list[str] = dataclasses.field(default_factory=list)
    confirm_id: str = ""  # a high-risk external tool waiting for the user's yes (not kept in the thread)
    confirm_tool: str = ""
    confirm_lines: list[str] = dataclasses.field(default_factory=list)
    confirm_state: str = ""  # pending | allowed | denied | failed
    rating: str = ""  # up | down: the user's thumbs on this answer (stored for the admins)


_PARTIAL_REF = re.compile(r"\[(?:r(?:e(?:f(?::\d*)?)?)?)?$")


CITATION_MARK = "r42:bron"  # the title of a citation link; components/r42_sanitize.js makes it a chip


def _link_text(label: str) -> str:
    """A topic label as the text of a markdown link: it cannot close the link or open a tag."""
    return re.sub(r"([\\\[\]<>`*_])", r"\\\1", label)


def _display(content: str, citations: list[UICitation], streaming: bool = False) -> str:
    """Markdown with each [ref:N] of this turn as a link chip to its topic; other refs stay plain text.
    While streaming, a reference still arriving (`[ref:` at the very end) is held back."""
    by_ref = {c.ref: c for c in citations}

    def link(match):
        c = by_ref.get(int(match.group(1)))
        return f' [{_link_text(c.label)}]({topic_url(c.slug, c.anchor)} "{CITATION_MARK}")' if c else match.group(0)

    content = content.replace(CITATION_MARK, "")  # only links made here are source chips (r42_sanitize.js)
    if streaming:
        content = _PARTIAL_REF.sub("", content)
    return REF_RE.sub(link, content)


def _cited(content: str, sources: list[UICitation]) -> list[UICitation]:
    """The sources an answer cites, in order of first use (for an answer that ended before its citations)."""
    by_ref = {c.ref: c for c in sources}
    refs = dict.fromkeys(int(m.group(1)) for m in REF_RE.finditer(content))
    return [by_ref[r] for r in refs if r in by_ref]


def _ui(m: ThreadMessage) -> UIMessage:
    cites = [UICitation(c.ref, c.slug, c.label, c.anchor) for c in m.citations]
    return UIMessage(m.id, m.role, m.content, m.status, cites, _display(m.content, cites), m.delta, m.delta_state,
                     describe_delta(m.delta))


def confirm_lines(arguments) -> list[str]:
    """A tool's arguments as readable lines for the confirmation card."""
    if not isinstance(arguments, dict) or not arguments:
        return ["(geen gegevens)"]
    return [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"[:300] for k, v in arguments.items()]


def _plain(value):
    """A plain copy of a value held in State (Reflex wraps dicts and lists in proxies)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _thread(m: UIMessage) -> ThreadMessage:
    status = "incomplete" if m.status == "streaming" else m.status  # a reload mid-answer finds it unfinished
    return ThreadMessage(m.id, m.role, m.content, status, [ThreadCitation(c.ref, c.slug, c.label, c.anchor) for c in m.citations],
                         _plain(m.delta), m.delta_state)


async def _claim_stream(run: str) -> float:
    """Note in the workers' shared state that this worker streams answer `run` (stream_check, in whichever
    worker holds the tab, asks whether it still does); returns when (time.monotonic())."""
    try:
        await services().liveness.claim_stream(run)
    except SharedStateUnavailable as exc:
        log.warning("noting which worker streams an answer failed: %s", exc)
    return time.monotonic()


async def _end_stream(run: str) -> None:
    try:
        await services().liveness.end_stream(run)
    except SharedStateUnavailable as exc:  # its record runs out by itself
        log.warning("ending an answer's record failed: %s", exc)


def _read_thread(user_id: str, callback):
    """Ask the browser for this user's stored thread; `callback` receives it (or None)."""
    return rx.call_script(f"window.localStorage.getItem({json.dumps(storage_key(user_id))})", callback=callback)


class ChatState(rx.State):
    """What the R42 window shows."""

    is_open: bool = False
    messages: list[UIMessage] = []
    streaming: bool = False
    mark: str = "idle"  # idle | typing | error
    error: str = ""
    notice: str = ""
    offline: bool = False
    availability: str = ""  # "" (R42 answers) | "disabled" (off for the tenant) | "denied" (no qa_help)
    my_capabilities: list[str] = []  # what R42 may do for this user, in words (account menu)
    show_capabilities: bool = False
    queued: str = ""  # a question typed while R42 was answering: sent when the answer ends
    _user_id: str = ""
    _stop: bool = False
    _cleared: float = 0.0  # when this user's thread was last cleared (in any tab)
    _removed: list[str] = []  # ids of messages taken out (regenerate, edit), so other tabs drop them too
    _keep_open: bool = False  # a citation chip was clicked: the window stays open on the page it opens
    # the answer being streamed (its worker is in the shared state: services().liveness); stream_check clears it,
    # so a late writer stops
    _stream_run: str = ""

    @rx.var(cache=False)
    def worker(self) -> str:
        return worker_tag()

    @rx.var
    def can_retry(self) -> bool:
        return self.mark == "error" and not self.streaming

    @rx.var
    def last_user_id(self) -> str:
        return next((m.id for m in reversed(self.messages) if m.role == "user"), "")

    @rx.var
    def last_assistant_id(self) -> str:
        """The answer that can be regenerated: the last message, when it is R42's answer to a question."""
        if self.messages and self.messages[-1].role == "assistant" and self.last_user_id:
            return self.messages[-1].id
        return ""

    @rx.var
    def last_question(self) -> str:
        """For Up-arrow in the empty box: the last question asked."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    # -- opening and the stored thread ------------------------------------------------

    async def _user(self, fresh: bool = False):
        auth = await self.get_state(AuthState)
        return await auth.user(fresh)

    @rx.event
    async def toggle(self):
        self.is_open = not self.is_open
        if self.is_open:
            return ChatState.load_thread

    @rx.event
    def keep_open(self):
        self._keep_open = True

    @rx.event
    def close(self):
        self.is_open = False

    @rx.event
    def page_view(self):
        """on_mount of the chat on every page: a new page view starts with the window closed (it covered
        pages), unless a citation chip led here. (Not on_load: Reflex runs on_load again when the websocket
        reconnects, say to another backend worker, and that must not close an open window.)"""
        if self._keep_open:
            self._keep_open = False
        else:
            self.is_open = False

    @rx.event
    async def check_access(self):
        """on_load of every page: is R42 on for this user now (master switch, qa_help), and what may it do."""
        user = await self._user()
        if user is None:
            return
        try:
            chatbot, resolution = await asyncio.to_thread(services().access.effective, user.tenant_id, user.id)
        except PBError as exc:  # keep what we knew; the turn's own guard still decides
            log.warning("checking R42 access failed: %s", exc)
            return
        self.availability = chat_availability(chatbot.enabled, resolution.effective)
        self.my_capabilities = [CAPABILITY_LABELS[c] for c in CAPABILITIES if c in resolution.effective] \
            if chatbot.enabled else []

    @rx.event
    def set_show_capabilities(self, show: bool):
        self.show_capabilities = bool(show)

    @rx.event
    async def open_with(self, question: str):
        """Open the window with `question` typed into the message box, not yet sent (the reader may edit it).
        During a quiz R42 is locked: say so instead of doing nothing."""
        user = await self._user()
        if user is not None:
            try:
                in_quiz = await asyncio.to_thread(services().quiz.active, user.id)
            except PBError:
                in_quiz = False  # the turn's own guard still refuses if a quiz is running
            if in_quiz:
                return rx.toast.info("R42 is vergrendeld zolang je toets loopt. Rond de toets af of stop ermee.")
        self.is_open = True
        fill = (f"(function fill(n) {{ var el = document.getElementById('r42-input'); "
                f"if (el) {{ el.value = {json.dumps(question[:MAX_MESSAGE_CHARS])}; el.focus(); "
                f"el.setSelectionRange(el.value.length, el.value.length); }} "
                f"else if (n < 60) {{ setTimeout(function () {{ fill(n + 1); }}, 50); }} }})(0)")
        return [ChatState.load_thread, rx.call_script(fill)]


    @rx.event
    async def load_thread(self):
        """Read this user's thread from localStorage (once per user per tab)."""
        user = await self._user()
        if user is None:
            return
        self.offline = services().settings.offline
        if self._user_id == user.id and self.messages:
            return
        self._user_id = user.id
        self.messages = []
        return _read_thread(user.id, ChatState.receive_thread)

    @rx.event
    async def receive_thread(self, raw: str | None):
        user = await self._user()
        if user is None or user.id != self._user_id:
            return
        messages, problem = parse(raw)
        self._cleared, self._removed = cleared_at(raw), removed_ids(raw)
        if messages is None:
            log.warning("replacing an unreadable stored thread (%s) for user %s", problem, user.id)
            self.notice = RESTORE_NOTICE
            messages = []
        self.messages = [_ui(m) for m in messages] or [_ui(greeting(user.name, user.tenant_name))]
        if problem:
            return ChatState.save_thread

    @rx.event
    async def save_thread(self):
        user = await self._user()
        if user is None or user.id != self._user_id:
            return
        data = serialise([_thread(m) for m in self.messages if m.role != "notice" or m.content], self._cleared,
                         self._removed)
        # Merged by message id with what another tab may have stored meanwhile (r42SaveThread in r42_app.py).
        return rx.call_script(f"window.r42SaveThread({json.dumps(storage_key(user.id))}, {json.dumps(data)})",
                              callback=ChatState.follow_thread)

    @rx.event
    async def follow_thread(self, raw: str | None):
        """The thread as stored after a merge, or after another tab saved (the `storage` event): this tab
        shows the union. Not while an answer streams here; the next save merges again."""
        user = await self._user()
        if user is None or user.id != self._user_id or self.streaming or not raw:
            return
        messages, _problem = parse(raw)
        if not messages:
            return
        cleared = cleared_at(raw)
        self._removed = list(dict.fromkeys([*self._removed, *removed_ids(raw)]))[-200:]
        mine = [_thread(m) for m in self.messages if m.role != "notice" or m.content]
        if cleared > self._cleared:  # cleared in another tab: start from what it left
            self._cleared = cleared
            merged = messages
        else:  # never a step back: a placeholder stored earlier does not replace the answer that came since
            merged = merge(mine, messages, set(self._removed))
        if merged != mine:
            self.messages = [_ui(m) for m in merged]

    @rx.event
    async def reload_thread(self):
        """Another tab changed this user's stored thread."""
        user = await self._user()
        if user is None or user.id != self._user_id:
            return
        return _read_thread(user.id, ChatState.follow_thread)

    @rx.event
    async def clear_thread(self):
        """Wipe the stored thread and start again with the greeting."""
        user = await self._user()
        if user is None or self.streaming:
            return
        self.messages = [_ui(greeting(user.name, user.tenant_name))]
        self.notice = self.error = ""
        self.mark = "idle"
        self._cleared = time.time()  # other tabs drop what came before
        key = json.dumps(storage_key(user.id))
        return [rx.call_script(f"window.localStorage.removeItem({key})"), ChatState.save_thread]

    @rx.event
    def forget(self, user_id: str = ""):
        """On sign-out: nothing of this user stays in the tab, nor in this browser's storage (a shared
        computer must not show the next person this user's conversation)."""
        user_id = user_id or self._user_id
        self.messages, self._user_id, self.is_open = [], "", False
        self.notice = self.error = self.queued = ""
        self.mark = "idle"
        if user_id:
            return rx.call_script(f"window.localStorage.removeItem({json.dumps(storage_key(user_id))})")

    @rx.event
    def dismiss_notice(self):
        self.notice = ""

    # -- asking ---------------------------------------------------------------------------

    @rx.event
    async def send(self, form: dict):
        """Enter or the send button. The box is emptied only when the question is taken: too long, it stays
        (with the reason); typed while R42 answers, it waits and goes when the answer ends."""
        text = str(form.get("message", "")).strip()
        if not text:
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self.error = (f"Je bericht is {len(text):,} tekens; het maximum is {MAX_MESSAGE_CHARS:,}. "
                          f"Maak het korter en verstuur opnieuw.").replace(",", ".")
            return
        if self.streaming:
            self.queued = text
            return rx.set_value("r42-input", "")
        if await self._user() is None:
            return
        if self.error.startswith("Je bericht is "):
            self.error = ""
        self.messages = [*self.messages, UIMessage(uuid.uuid4().hex[:12], "user", text, "ok", [], text)]
        return [rx.set_value("r42-input", ""), *(await self._start())]

    @rx.event
    async def send_queued(self):
        """The answer ended: the waiting question goes now."""
        if not self.queued or self.streaming:
            return
        text, self.queued = self.queued, ""
        if await self._user() is None:
            return
        self.messages = [*self.messages, UIMessage(uuid.uuid4().hex[:12], "user", text, "ok", [], text)]
        return await self._start()

    @rx.event
    def cancel_queued(self):
        """Take the waiting question back into the box."""
        text, self.queued = self.queued, ""
        return rx.set_value("r42-input", text)

    @rx.event
    def copy(self, message_id: str):
        """Put an answer's text on the clipboard, its [ref:N] markers left out."""
        target = next((m for m in self.messages if m.id == message_id), None)
        if target is None:
            return
        text = re.sub(r"[ \t]+", " ", REF_RE.sub("", target.content)).replace(" .", ".").strip()
        return [rx.set_clipboard(text), rx.toast("Antwoord gekopieerd", duration=1500)]

    @rx.event
    async def rate(self, message_id: str, rating: str):
        """Thumbs up or down: stored with the question, the answer and its citations for the tenant's admins."""
        from r42_app.services.store.feedback import FeedbackError

        user = await self._user()
        index = next((i for i, m in enumerate(self.messages) if m.id == message_id and m.role == "assistant"), None)
        if user is None or index is None or rating not in ("up", "down"):
            return
        target = self.messages[index]
        question = next((m.content for m in reversed(self.messages[:index]) if m.role == "user"), "")
        cites = [{"slug": c.slug, "label": c.label} for c in target.citations]
        try:
            await asyncio.to_thread(services().feedback.record, user.tenant_id, user.id, rating, question,
                                    target.content, cites, message_id)
        except FeedbackError as exc:  # refused for a reason the user can act on (too many at once): say which
            log.warning("feedback not stored: %s", exc)
            return rx.toast.error(f"Je beoordeling is niet opgeslagen. {exc}")
        except PBError as exc:
            log.warning("feedback not stored: %s", exc)
            return rx.toast.error("Je beoordeling is niet opgeslagen; probeer het later opnieuw.")
        self.messages = [dataclasses.replace(m, rating=rating) if m.id == message_id else m for m in self.messages]
        return rx.toast("Bedankt! Je beoordeling helpt de beheerders R42 te verbeteren.", duration=2000)

    @rx.event
    async def regenerate(self):
        """Ask for the last answer again: it is replaced by a new one."""
        if self.streaming or not self.last_assistant_id:
            return
        self._removed = [*self._removed, self.messages[-1].id][-200:]
        self.messages = self.messages[:-1]
        return await self._start()

    @rx.event
    def edit_last(self):
        """Take the last question (and its answer) back into the box, to change and send again."""
        if self.streaming or not self.last_user_id:
            return
        cut = max(i for i, m in enumerate(self.messages) if m.role == "user")
        text = self.messages[cut].content
        self._removed = [*self._removed, *(m.id for m in self.messages[cut:])][-200:]
        self.messages = self.messages[:cut]
        return [rx.set_value("r42-input", text), rx.call_script("window.r42Count && window.r42Count()"),
                ChatState.save_thread]

    @rx.event
    async def retry(self):
        if self.streaming or not any(m.role == "user" for m in self.messages):
            return
        return await self._start()

    async def _start(self):
        self.messages = [*self.messages, UIMessage(uuid.uuid4().hex[:12], "assistant", "", "streaming", [], "")]
        self.streaming, self._stop = True, False
        # this worker streams the answer (generate claims it again where it runs): stream_check can tell when
        # it is gone
        self._stream_run = uuid.uuid4().hex
        await _claim_stream(self._stream_run)
        self.mark, self.error = "typing", ""
        return [ChatState.save_thread, ChatState.generate]

    @rx.event
    async def answer_delta(self, message_id: str, yes: bool):
        """The chip's Yes/No. What Yes means is decided on the server (`confirm_delta`): an admin's edit
        is applied now, a learner's becomes a pending suggestion. Answered once."""
        user = await self._user(fresh=True)  # a write: the role as it is now
        target = next((m for m in self.messages if m.id == message_id), None)
        if user is None or target is None or target.delta_state != "pending":
            return
        state, note = "declined", ""
        if yes:
            try:
                outcome = await confirm_delta(user, _plain(target.delta), services().chat)
                state, note = outcome.state, outcome.message
            except (ChatRefused, DeltaNotApplied) as exc:
                state, note = "failed", str(exc)
        self.messages = [dataclasses.replace(m, delta_state=state) if m.id == message_id else m for m in self.messages]
        self.messages = [*self.messages, UIMessage(uuid.uuid4().hex[:12], "notice", note)] if note else self.messages
        return ChatState.save_thread

    @rx.event
    async def answer_confirmation(self, message_id: str, allow: bool):
        """Toestaan / Weigeren on a high-risk tool card: the waiting turn goes on (once, this user only)."""
        user = await self._user()
        target = next((m for m in self.messages if m.id == message_id), None)
        if user is None or target is None or target.confirm_state != "pending":
            return
        try:
            await services().external.broker.answer(target.confirm_id, user.id, "allow" if allow else "deny")
            state = "allowed" if allow else "denied"
        except ConfirmationError as exc:
            state = "failed"
            yield rx.toast.error(exc.message)
        self.messages = [dataclasses.replace(m, confirm_state=state) if m.id == message_id else m for m in self.messages]

    @rx.event
    def stop(self):
        self._stop = True

    def _set_last(self, **changes) -> None:
        last = dataclasses.replace(self.messages[-1], **changes)
        self.messages = [*self.messages[:-1], last]

    @rx.event
    async def stream_check(self):
        """While an answer streams the tab asks now and then (assets/r42.js). When the worker
        that streamed it is gone (it died, and the tab reconnected to another), the answer ends here as
        incomplete, with "Opnieuw", instead of spinning for ever."""
        if not self.streaming or not self._stream_run:  # not known: never cut an answer on a guess
            return
        try:
            if await services().liveness.stream_alive(self._stream_run):
                return
        except SharedStateUnavailable as exc:
            log.warning("cannot tell whether an answer's worker lives (%s); it goes on", exc)
            return
        log.warning("the worker of answer %s is gone; ending the answer as incomplete", self._stream_run[:8])
        if self.messages and self.messages[-1].role == "assistant":
            last = self.messages[-1]
            self._set_last(status="incomplete" if last.content else "error",
                           display=_display(last.content, last.citations))
        self.streaming, self.error, self.mark = False, CUT_OFF, "error"
        self._stream_run = ""
        return ChatState.save_thread

    @rx.event(background=True)
    async def generate(self):
        """Stream one answer into the last message; lock blocks stay short."""
        async with self:
            run = self._stream_run
            user = await self._user()
            history = [{"role": m.role, "content": m.content} for m in self.messages[:-1]
                       if m.role in ("user", "assistant") and m.content.strip() and m.id != "greeting"
                       and m.status not in ("error", "incomplete", "quota")]
        claimed = await _claim_stream(run)  # this worker streams it, wherever _start ran
        text, citations, status, dropped = "", [], "ok", 0
        sources: list[UICitation] = []  # this turn's snippets: their [ref:N] become chips as the text arrives
        delta: dict = {}
        rejected: list[str] = []
        try:
            async with contextlib.aclosing(run_turn(user, history, services().chat)) as turn:  # stop closes it now
                async for event in turn:
                    if time.monotonic() - claimed > STREAM_REFRESH_S:  # still streaming: renew the claim
                        claimed = await _claim_stream(run)
                    async with self:
                        if self._stream_run != run:  # ended meanwhile (stream_check): write nothing more
                            return
                        if self._stop:
                            status = "incomplete"
                            break
                        kind = event["type"]
                        if kind == "sources":
                            sources = [UICitation(x["ref"], x["slug"], x["label"], x.get("passage", ""))
                                       for x in event["sources"]]
                        elif kind == "text":
                            text += event["text"]
                            self._set_last(content=text, display=_display(text, sources, streaming=True))
                        elif kind == "citation":
                            citations.append(UICitation(event["ref"], event["slug"], event["label"],
                                                        event.get("passage", "")))
                        elif kind == "delta":
                            delta = event["delta"]
                        elif kind == "delta_rejected":
                            rejected.append(event["message"])
                        elif kind == "confirm_required":
                            self._set_last(confirm_id=event["id"], confirm_tool=event["tool"],
                                           confirm_lines=confirm_lines(event["input"]), confirm_state="pending")
                        elif kind == "error":
                            status = "incomplete" if text else "error"
                            self.error = event["message"]
                            self.mark = "error"
                        elif kind == "done":
                            dropped = event["dropped"]
                            status = "offline" if event["offline"] else "ok"
        except ChatRefused as exc:
            async with self:
                if exc.kind == "quota_exceeded":  # an upsell hint in the thread, not an error state
                    status, text = "quota", exc.message
                else:
                    status, self.error, self.mark = "error", str(exc), "error"
        except ChatInputError as exc:
            async with self:
                status, self.error, self.mark = "error", str(exc), "error"
        except Exception as exc:  # never leave the window spinning
            log.exception("chat turn failed")
            async with self:
                status, self.error, self.mark = "error", f"Er ging iets mis: {exc}", "error"
        if not citations and sources:  # stopped, cut off or failed before the citations came: resolve them here
            citations = _cited(text, sources)
        async with self:
            if self._stream_run != run:  # ended meanwhile (stream_check): the answer is no longer ours
                return
            self._stream_run = ""
            self._set_last(content=text, status=status, citations=citations, display=_display(text, citations),
                           delta=delta, delta_state="pending" if delta else "", delta_lines=describe_delta(delta))
            if rejected:
                self.messages = [*self.messages, *[UIMessage(uuid.uuid4().hex[:12], "notice", m) for m in rejected]]
            if dropped and not any(m.content == DROPPED_NOTICE for m in self.messages[-3:]):
                self.messages = [*self.messages[:-1], UIMessage(uuid.uuid4().hex[:12], "notice", DROPPED_NOTICE),
                                 self.messages[-1]]
            self.streaming = False
            if self.mark != "error":
                self.mark = "idle"
            waiting = bool(self.queued)
        await _end_stream(run)
        return [ChatState.save_thread, ChatState.send_queued] if waiting else ChatState.save_thread
