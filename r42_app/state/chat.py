"""ChatState: the R42 window. Thin: the turn itself is r42_app.chat.turn; the thread lives in the
browser's localStorage under `chat:thread:{userId}` and only passes through here."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid

import reflex as rx
from reflex.event import EventSpec

from r42_app.chat.confirm import DeltaNotApplied, confirm_delta
from r42_app.chat.turn import ChatRefused, run_turn
from r42_app.chat.window import AnswerView
from r42_app.container import services
from r42_app.core.chat import MAX_MESSAGE_CHARS, ChatInputError
from r42_app.core.chat_view import (
    UIMessage,
    answer_and_question,
    chips,
    copy_text,
    display,
    latest_question,
    model_history,
    plain,
)
from r42_app.core.identity import SignedInUser
from r42_app.core.mcp import ConfirmationError
from r42_app.core.messages import msg, number
from r42_app.services.runtime.liveness import STREAM_REFRESH_S, worker_tag
from r42_app.services.runtime.shared_state import SharedStateUnavailable
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AFTER_SIGN_IN, ON_FRAMED_LAUNCH, ON_SIGN_OUT, AuthState
from r42_app.state.chat_thread import ThreadMixin, topic_labels
from r42_app.state.chat_window import WindowMixin
from r42_app.state.held import hold

log = logging.getLogger(__name__)
FOCUS_INPUT = "window.r42FocusInput && window.r42FocusInput()"  # assets/r42.js: the question box, once it is there
FIT_INPUT = "window.r42Count && window.r42Count()"  # assets/r42.js: the box's counter and height follow its text


def _box(text: str) -> list[EventSpec]:
    """Put `text` in the question box (setting a value is no typing: its height and counter are fitted after)."""
    return [rx.set_value("r42-input", text), rx.call_script(FIT_INPUT)]


def _rated() -> EventSpec:
    return rx.toast(msg("chat.rated"), duration=2000)


# The answers this worker streams: run -> the queue their events come through. `stop` puts _STOPPED in it, so the
# answer stops at once, also while the model says nothing for a while (a pause, a tool that takes long).
_QUEUES: dict[str, asyncio.Queue] = {}
_END, _STOPPED = object(), object()  # the turn has no more events; the user stopped it


async def _pump(turn_events, queue: asyncio.Queue) -> None:
    """Read the turn's events into `queue`, then _END; an exception of the turn goes there too (`generate` raises
    it). One task reads them all, so the turn runs in one context (its language) however `generate` waits."""
    try:
        async with contextlib.aclosing(turn_events) as turn:
            async for event in turn:
                queue.put_nowait(event)
    except Exception as exc:  # noqa: BLE001 (raised again by the reader)
        queue.put_nowait(exc)
    except asyncio.CancelledError:  # (by generate once it stopped reading; by anything else, the answer fails)
        queue.put_nowait(RuntimeError("reading the turn was cancelled"))
        raise
    finally:
        queue.put_nowait(_END)


async def _next_events(queue: asyncio.Queue) -> list:
    """The events that came since the last call (at least one; the last may be _END, _STOPPED or an exception)."""
    got = [await queue.get()]
    while not queue.empty() and not (got[-1] is _END or got[-1] is _STOPPED or isinstance(got[-1], Exception)):
        got.append(queue.get_nowait())
    return got


class ChatState(WindowMixin, ThreadMixin, rx.State):
    """What the R42 window shows. Opening, closing and what R42 may do for the user are WindowMixin's
    (state/chat_window.py), the stored thread ThreadMixin's (state/chat_thread.py); asking and streaming an
    answer are here. With several workers the tab may reconnect to another worker while the worker streaming
    its answer died: stream_check then ends the answer (services/runtime/liveness.py tells)."""

    _stop: bool = False
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
        return latest_question(self.messages).id

    @rx.var
    def last_assistant_id(self) -> str:
        """The answer that can be regenerated: the last message, when it is R42's answer to a question."""
        if self.messages and self.messages[-1].role == "assistant" and self.last_user_id:
            return self.messages[-1].id
        return ""

    @rx.var
    def last_question(self) -> str:
        """For Up-arrow in the empty box: the last question asked."""
        return latest_question(self.messages).content

    # -- asking ---------------------------------------------------------------------------

    @rx.event
    async def send(self, form: dict):
        """Enter or the send button. The box is emptied only when the question is taken: too long, it stays
        (with the reason); typed while R42 answers, it waits and goes when the answer ends."""
        text = str(form.get("message", "")).strip()
        if not text:
            return
        if await self._user() is None:  # (and the event speaks the person's language: "too long" came in Dutch)
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self.error = msg("chat.too_long", length=number(len(text)), maximum=number(MAX_MESSAGE_CHARS))
            return
        if self.streaming:
            self.queued = text
            return _box("")
        if self.error.startswith(msg("chat.too_long").split("{")[0]):
            self.error = ""
        if self.editing:  # an edited question replaces the one it came from, and that one's answer
            self._cut_from(self.editing)
        return [*_box(""), *(await self._ask(text))]

    @rx.event
    async def send_queued(self):
        """The answer ended: the waiting question goes now."""
        if not self.queued or self.streaming:
            return
        text, self.queued = self.queued, ""
        if await self._user() is None:
            return
        return await self._ask(text)

    @rx.event
    def cancel_queued(self):
        """Take the waiting question back into the box."""
        text, self.queued = self.queued, ""
        return _box(text)

    @rx.event
    async def copy(self, message_id: str):
        """Put an answer's text on the clipboard, its [ref:N] markers left out."""
        target = next((m for m in self.messages if m.id == message_id), None)
        if target is None or await self._user() is None:  # (the toast in the person's language)
            return
        return [rx.set_clipboard(copy_text(target.content)), rx.toast(msg("chat.copied"), duration=1500)]

    @rx.event
    async def rate(self, message_id: str, rating: str):
        """Thumbs up or down: stored with the question, the answer and its citations for the tenant's admins, without
        the user's name unless "Zet mijn naam erbij" is on (the privacy rule, issue 44)."""
        from r42_app.services.store.feedback import FeedbackError

        user = await self._user()
        rated = answer_and_question(self.messages, message_id)
        if user is None or rated is None or rating not in ("up", "down"):
            return
        target, question = rated
        cites = [{"ref": c.ref, "slug": c.slug, "label": c.label, "anchor": c.anchor} for c in target.citations]
        try:
            await asyncio.to_thread(services().feedback.record, user.tenant_id, user.id, rating, question,
                                    target.content, cites, message_id, self.sign_ratings)
        except FeedbackError as exc:  # refused for a reason the user can act on (too many at once): say which
            log.warning("feedback not stored: %s", exc)
            return rx.toast.error(msg("chat.rating_refused", reason=exc.user_message))
        except PBError as exc:
            log.warning("feedback not stored: %s", exc)
            return rx.toast.error(msg("chat.rating_not_stored"))
        self._change(message_id, rating=rating)
        try:  # the gaps report counts a thumbs down as a question badly answered
            await asyncio.to_thread(
                lambda: services().questions.set_feedback(user.tenant_id, user.id, question, rating))
        except PBError as exc:
            log.warning("the question log did not take the rating: %s", exc)
        if rating == "down":  # ask what was wrong, optionally, right under the answer
            self.reason_for = message_id
            return rx.call_script("window.r42FocusReason && window.r42FocusReason()")
        self.reason_for = "" if self.reason_for == message_id else self.reason_for
        return _rated()

    @rx.event
    async def send_reason(self, form: dict):
        """The optional reason after a thumbs-down: added to that rating for the admins."""
        from r42_app.services.store.feedback import FeedbackError

        message_id, self.reason_for = self.reason_for, ""
        reason = str(form.get("reason") or "") if isinstance(form, dict) else ""
        user = await self._user()
        if user is None or not message_id:
            return
        refocus = rx.call_script(FOCUS_INPUT)
        if not reason.strip():
            return [refocus, _rated()]
        try:
            stored = await asyncio.to_thread(services().feedback.add_reason, user.tenant_id, user.id, message_id,
                                             reason)
        except FeedbackError as exc:
            self.reason_for = message_id  # the form stays, with its text, and says why
            return rx.toast.error(msg("chat.rating_refused", reason=exc.user_message))
        except PBError as exc:
            log.warning("feedback reason not stored: %s", exc)
            self.reason_for = message_id
            return rx.toast.error(msg("chat.rating_not_stored"))
        if not stored:
            return [refocus, rx.toast.error(msg("chat.rating_not_stored"))]
        return [refocus, rx.toast(msg("chat.reason_thanks"), duration=2500)]

    @rx.event
    async def skip_reason(self):
        """No reason: the thumbs-down stays as it is."""
        self.reason_for = ""
        if await self._user() is None:  # (and its thanks in the person's language)
            return rx.call_script(FOCUS_INPUT)
        return [rx.call_script(FOCUS_INPUT), _rated()]

    @rx.event
    async def regenerate(self):
        """Ask for the last answer again: it is replaced by a new one."""
        if self.streaming or not self.last_assistant_id:
            return
        self.editing = ""
        self._removed = [*self._removed, self.messages[-1].id][-200:]
        self.messages = self.messages[:-1]
        return await self._start()

    @rx.event
    def edit_last(self):
        """Put the last question in the box to change and send again. The question and its answer stay in the
        thread until the edit is sent (then both are replaced); "Annuleren" leaves them as they were."""
        if self.streaming or not self.last_user_id:
            return
        self.editing = self.last_user_id
        return [*_box(self.last_question), rx.call_script(FOCUS_INPUT)]

    @rx.event
    def cancel_edit(self):
        """Annuleren: the question and its answer stay as they were, and the box is empty again."""
        self.editing = ""
        return [*_box(""), rx.call_script(FOCUS_INPUT)]

    def _cut_from(self, message_id: str) -> None:
        """Take a question and everything after it out of the thread (other tabs drop them too)."""
        self.editing = ""
        cut = next((i for i, m in enumerate(self.messages) if m.id == message_id), None)
        if cut is None:  # gone meanwhile (cleared in another tab): the edit is a new question
            return
        self._removed = [*self._removed, *(m.id for m in self.messages[cut:])][-200:]
        self.messages = self.messages[:cut]

    @rx.event
    async def retry(self):
        if self.streaming or not any(m.role == "user" for m in self.messages):
            return
        return await self._start()

    async def _ask(self, text: str):
        self.messages = [*self.messages, UIMessage(uuid.uuid4().hex[:12], "user", text, "ok", [], text)]
        return await self._start()

    async def _start(self):
        self.messages = [*self.messages, UIMessage(uuid.uuid4().hex[:12], "assistant", "", "streaming", [], "")]
        self.streaming, self._stop = True, False
        # this worker streams the answer (generate claims it again where it runs): stream_check can tell when
        # it is gone
        self._stream_run = uuid.uuid4().hex
        await services().liveness.note_stream(self._stream_run)
        self.mark, self.error, self.announcement = "typing", "", ""
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
                outcome = await confirm_delta(user, plain(target.delta), services().chat)
                state, note = outcome.state, outcome.message
            except (ChatRefused, DeltaNotApplied) as exc:
                log.info("edit not confirmed for user %s: %s", user.id, exc)
                state, note = "failed", exc.user_message
        self._change(message_id, delta_state=state)
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
            log.info("confirmation %s refused for user %s: %s", target.confirm_id, user.id, exc)
            state = "failed"
            yield rx.toast.error(exc.user_message)
        self._change(message_id, confirm_state=state)

    @rx.event
    def stop(self):
        self._stop = True
        if self._stream_run in _QUEUES:  # streamed by this worker: it stops now, not at the model's next word
            _QUEUES[self._stream_run].put_nowait(_STOPPED)

    def _change(self, message_id: str, **changes) -> None:
        self.messages = [dataclasses.replace(m, **changes) if m.id == message_id else m for m in self.messages]

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
        await self._user()  # the message below in the person's language (the event starts in Dutch)
        if self.messages and self.messages[-1].role == "assistant":
            last = self.messages[-1]
            self._set_last(status="incomplete" if last.content else "error",
                           display=display(last.content, last.citations), chips=chips(last.citations))
        self.streaming, self.error, self.mark = False, msg("chat.cut_off"), "error"
        self.announcement = self.error
        self._stream_run = ""
        return ChatState.save_thread

    @rx.event(background=True)
    async def generate(self):
        """Stream one answer into the last message (chat/window.py decides what it shows); lock blocks stay short."""
        queue: asyncio.Queue = asyncio.Queue()
        async with self:
            run = self._stream_run
            user = await self._user()
            token = (await self.get_state(AuthState)).session_token  # the guard asks PocketBase about it too
            history = model_history(self.messages[:-1])
            _QUEUES[run] = queue
            if self._stop:  # stopped before it began
                queue.put_nowait(_STOPPED)
        answer = AnswerView()
        pump = None
        try:
            claimed = await services().liveness.note_stream(run)  # this worker streams it, wherever _start ran
            pump = hold(_pump(run_turn(user, history, services().chat, token=token), queue))
            while True:
                got = await _next_events(queue)
                if time.monotonic() - claimed > STREAM_REFRESH_S:  # still streaming: renew the claim
                    claimed = await services().liveness.note_stream(run)
                failed = None
                async with self:  # what came meanwhile, in one change of the window
                    if self._stream_run != run:  # ended meanwhile (stream_check): write nothing more
                        return
                    stopped = self._stop or got[-1] is _STOPPED  # (a stop handled by another worker: its flag)
                    for event in [] if stopped else got:
                        if event is _END:
                            break
                        if isinstance(event, Exception):
                            failed = event
                            break
                        changes = answer.apply(event)
                        if changes:
                            self._set_last(**changes)
                        if answer.error:
                            self.error, self.mark = answer.error, "error"
                if failed is not None:
                    raise failed
                if stopped:
                    answer.stopped()
                if stopped or got[-1] is _END:
                    break
        except ChatRefused as exc:
            answer.refused(exc.kind, exc.user_message)
            if exc.kind == "unauthenticated" and user is not None:  # signed out, or moved to another tenant or role:
                async with self:  # the tab asks PocketBase now (signs out with a message, or takes the new tenant)
                    await (await self.get_state(AuthState)).user(fresh=True)
        except ChatInputError as exc:
            log.warning("the window sent a history the turn refused: %s", exc)
            answer.refused("bad_input", msg("chat.bad_input"))
        except Exception:  # never leave the window spinning, and never show the exception's text
            log.exception("chat turn failed")
            answer.refused("internal", msg("chat.failed"))
        finally:
            _QUEUES.pop(run, None)
            if pump is not None:  # ends the turn if it still runs (stopped): what it used is paid (chat/turn.py)
                pump.cancel()
        labels = await asyncio.to_thread(topic_labels, user, [answer])  # names the existing topics of a proposal
        async with self:
            if self._stream_run != run:  # ended meanwhile (stream_check): the answer is no longer ours
                return
            self._stream_run = ""
            if answer.error:
                self.error, self.mark = answer.error, "error"
            self._set_last(**answer.final(labels))
            self.announcement = answer.announcement()
            notices = [UIMessage(uuid.uuid4().hex[:12], "notice", m) for m in answer.rejected]
            self.messages = [*self.messages, *notices]
            dropped = msg("chat.history_dropped")
            if answer.dropped and not any(m.content == dropped for m in self.messages[-3:]):
                self.messages = [*self.messages[:-1], UIMessage(uuid.uuid4().hex[:12], "notice", dropped),
                                 self.messages[-1]]
            self.streaming = False
            if self.mark != "error":
                self.mark = "idle"
            waiting = bool(self.queued)
        await services().liveness.forget_stream(run)
        return [ChatState.save_thread, ChatState.send_queued] if waiting else ChatState.save_thread


async def _open_on_launch(auth: AuthState, user: SignedInUser):
    """A launch from a learning environment lands with R42's window open on the page (not during a quiz)."""
    try:
        in_quiz = await asyncio.to_thread(services().quiz.active, user.id)
    except PBError:
        in_quiz = True  # unknown: leave it closed; the turn's own guard decides anyway
    chat = await auth.get_state(ChatState)
    if not in_quiz:
        chat.is_open, chat._keep_open = True, True  # the window mounts after this: page_view keeps it open
    return ChatState.load_thread


async def _forget_on_sign_out(user: SignedInUser | None) -> list:
    return [ChatState.forget(user.id if user else "")]  # the chat window forgets this user


AFTER_SIGN_IN.append(ChatState.check_access)  # is R42 on for this user (the launcher says so if not)
ON_SIGN_OUT.append(_forget_on_sign_out)
ON_FRAMED_LAUNCH.append(_open_on_launch)
