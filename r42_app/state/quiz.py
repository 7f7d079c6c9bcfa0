"""QuizState: the `/testen` page (intro -> questions -> result) and the quiz lock on R42.

While a quiz runs the server holds an active `quiz_sessions` row (that is what refuses chat) and
the browser holds localStorage `quiz:active:{userId}` = "true" (that is what hides the launcher in
every tab, through the storage event). Both are cleared on every non-quiz phase, when the page is
left, on sign-out, and best effort on tab close; the row also expires by itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time

import reflex as rx

from r42_app.container import services
from r42_app.core.kb import TYPE_PLURALS
from r42_app.core.messages import N_, msg
from r42_app.core.quiz import DEFAULT_QUESTIONS, QUIZ_MAX_MINUTES, SCOPES, Question, QuizError, generate_quiz, score
from r42_app.services.store.pb import PBError
from r42_app.state.auth import ON_SIGN_OUT, AuthState
from r42_app.state.chat import ChatState

log = logging.getLogger(__name__)

SCOPE_LABELS = {"all": N_("Alle onderwerpen"), **TYPE_PLURALS}
REVEAL_HOLD_S = 0.5  # "Volgende" counts only this long after the verdict appeared
KIND_LABELS = {"description": N_("Omschrijving"), "part_of": N_("Onderdeel van"), "executed_by": N_("Uitgevoerd door"),
               "depends_on": N_("Afhankelijk van")}


def flag_key(user_id: str) -> str:
    """The localStorage key the launcher watches."""
    return f"quiz:active:{user_id}"


def flag_script(user_id: str, on: bool) -> str:
    """Set or clear the browser flag, and tell this tab (other tabs hear the storage event)."""
    key = json.dumps(flag_key(user_id))
    change = f"localStorage.setItem({key}, 'true')" if on else f"localStorage.removeItem({key})"
    return f"{change}; window.dispatchEvent(new Event('quiz-state'));"


async def end_quiz(user) -> list:
    """Close the user's server quiz session and clear the browser flag (events to return)."""
    try:
        await asyncio.to_thread(services().quiz.end, user.id)
    except PBError as exc:  # the row still expires by itself
        log.error("ending the quiz of %s failed: %s", user.id, exc)
    return [rx.call_script(flag_script(user.id, False))]


@dataclasses.dataclass
class UIQuestion:
    id: str = ""
    kind: str = ""
    prompt: str = ""
    options: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class UIReview:
    number: int = 0
    prompt: str = ""
    chosen: str = ""
    right: str = ""
    correct: bool = False
    slug: str = ""


class QuizState(rx.State):
    phase: str = "intro"  # intro | questions | result | ended
    scope: str = "all"
    error: str = ""
    starting: bool = False
    questions: list[UIQuestion] = []
    index: int = 0
    choice: str = ""  # the option chosen for the current question ("" = none yet)
    revealed: bool = False  # the current answer is recorded and checked: right or wrong is shown
    was_right: bool = False
    right_answer: str = ""
    correct: int = 0
    total: int = 0
    percent: int = 0
    reviews: list[UIReview] = []
    ended_reason: str = ""
    held: bool = False  # a press came within REVEAL_HOLD_S of the verdict: the page says why it waited
    _key: list = []  # the Questions, with their answers: never sent to the browser
    _answers: dict[str, int] = {}
    _session: str = ""  # the quiz_sessions row of this attempt
    _revealed_at: float = 0.0  # when right/wrong was shown: a double click must not skip past it
    _unseen_end: bool = False  # the attempt ended while the page was not shown: say so on the next visit

    @rx.var
    def current(self) -> UIQuestion:
        return self.questions[self.index] if 0 <= self.index < len(self.questions) else UIQuestion()

    @rx.var
    def is_last(self) -> bool:
        return self.index >= len(self.questions) - 1

    @rx.var
    def progress(self) -> int:
        return round(100 * self.index / len(self.questions)) if self.questions else 0

    async def _user(self):
        return await (await self.get_state(AuthState)).user()

    @rx.event
    async def load(self):
        """on_load of `/testen`. Reflex runs on_load again when the websocket reconnects (to another
        backend worker, say): that must not end a running quiz, so page views are handled in `shown`."""
        self.error, self.starting = "", False

    @rx.event
    async def shown(self):
        """on_mount of the quiz page (a real page view): the intro. A reload of this tab mid-quiz ends that
        quiz and says so; a new tab leaves a quiz running in another tab alone (it must stay locked)."""
        user = await self._user()
        if user is None:
            return
        if self.phase == "questions":  # this tab was reloaded mid-quiz: that attempt is over, and we say so
            return await self._ended(user, "reload")
        if not (self.phase == "ended" and self._unseen_end):
            self.phase = "intro"
        self._unseen_end = False

    @rx.event
    def set_scope(self, value: str | list[str]):
        self.scope = value if isinstance(value, str) and value in SCOPES else "all"

    @rx.event
    async def start(self):
        user = await self._user()
        if user is None or self.phase == "questions" or self.starting:
            return
        self.error, self.starting = "", True
        yield
        try:
            kb = await asyncio.to_thread(services().kb.load, user.tenant)
            key = await asyncio.to_thread(generate_quiz, kb.topics, kb.relations, self.scope, DEFAULT_QUESTIONS)
            session = await asyncio.to_thread(services().quiz.start, user.tenant, user.id)
        except QuizError as exc:
            log.info("no quiz for tenant %s: %s", user.tenant.slug, exc)
            self.error = exc.user_message
            return
        except PBError as exc:
            log.error("starting a quiz failed: %s", exc)
            self.error = msg("quiz.start_failed")
            return
        finally:
            self.starting = False
        self._key, self._answers, self._session = key, {}, session
        self.questions = [UIQuestion(q.id, KIND_LABELS.get(q.kind, q.kind), q.prompt, list(q.options)) for q in key]
        self.index, self.choice, self.revealed, self.held, self.phase = 0, "", False, False, "questions"
        yield [rx.call_script(flag_script(user.id, True)), ChatState.close]  # an open chat window closes

    @rx.event
    def choose(self, value: str | list[str]):
        if (self.phase == "questions" and not self.revealed and isinstance(value, str)
                and value in self.current.options):
            self.choice = value

    @rx.event
    async def next(self):
        """"Controleren" records the chosen option and shows right or wrong; the next press goes on
        (after the last question, to the result). Every answer is checked against the server's session
        first: an attempt whose session ended (elsewhere, or by expiry) takes no more answers and gets
        no score. The hold against a double click counts from when the verdict was sent to the page, not from
        when it was decided (what the learner can have read is what they saw). (The page keeps the button
        where it was when the verdict appears: when the verdict pushed it down, a double click's second click
        landed on the verdict.)"""
        if self.phase != "questions":
            return
        if self.revealed:
            if time.time() - self._revealed_at < REVEAL_HOLD_S:  # the second click of a double click
                self.held = True  # not swallowed silently: the page says why it did not go on
                return
            self.revealed, self.choice, self.right_answer, self.held = False, "", "", False
            if self.index < len(self._key) - 1:
                self.index += 1
                return
            yield await self._finish()
            return
        if not self.choice:
            return
        user = await self._user()
        try:
            status = (await asyncio.to_thread(services().quiz.attempt_status, user.id, self._session)
                      if user else "ended")
        except PBError as exc:
            log.error("checking the quiz session failed: %s", exc)
            yield rx.toast.error(msg("quiz.answer_failed"))
            return
        if status != "open":
            yield await self._ended(user, status)
            return
        question: Question = self._key[self.index]
        chosen = list(question.options).index(self.choice)
        self._answers = {**self._answers, question.id: chosen}
        self.revealed, self.was_right, self._revealed_at = True, chosen == question.answer, time.time()
        self.right_answer = question.answer_label
        yield  # the verdict goes to the page now ...
        self._revealed_at = time.time()  # ... and the hold counts from there

    async def _ended(self, user, ending: str):
        """The attempt is over without a score (`ending`: ended | expired | reload | left | stopped, a `quiz.*`
        code):
        forget its questions and answers, unlock R42 here."""
        self.phase, self.ended_reason, self.choice = "ended", msg(f"quiz.{ending}", minutes=QUIZ_MAX_MINUTES), ""
        self.revealed, self.right_answer, self.held = False, "", False
        self.questions, self._key, self._answers, self._session = [], [], {}, ""
        return await end_quiz(user) if user else None

    async def _finish(self):
        user = await self._user()
        result = score(self._key, self._answers)
        self.correct, self.total, self.percent = result.correct, result.total, result.percent
        self.reviews = [UIReview(i + 1, r.question.prompt,
                                 r.question.options[r.chosen] if r.chosen is not None else msg("quiz.not_answered"),
                                 r.question.answer_label, r.correct, r.question.option_slugs[r.question.answer])
                        for i, r in enumerate(result.reviews)]
        self.phase = "result"
        return await end_quiz(user) if user else None

    @rx.event
    async def stop(self):
        """"Stoppen" (confirmed in the page's dialog): the attempt ends without a score, and the page says so."""
        user = await self._user()
        if self.phase != "questions":
            return
        return await self._ended(user, "stopped")

    @rx.event
    async def again(self):
        self.phase, self.error = "intro", ""

    @rx.event
    async def leave(self):
        """The page unmounts (navigation inside the app): a running quiz ends."""
        user = await self._user()
        if user is None or self.phase != "questions":
            return  # only a quiz running in this tab ends here
        events = await self._ended(user, "left")
        self._unseen_end = True  # coming back to /testen says the attempt ended
        return events


async def _end_on_sign_out(user) -> list:
    return await end_quiz(user) if user else []  # a running quiz ends with the session


ON_SIGN_OUT.insert(0, _end_on_sign_out)  # before the chat window forgets (the order of the events before)
