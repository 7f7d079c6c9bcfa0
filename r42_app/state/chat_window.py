"""The chat window's frame: opening and closing it on every page, and whether R42 answers this user (master
switch, capabilities). ChatState (state/chat.py) takes these events in as a mixin."""

from __future__ import annotations

import asyncio
import json
import logging

import reflex as rx

from r42_app.container import services
from r42_app.core.capabilities import CAPABILITIES, CAPABILITY_LABELS, chat_availability
from r42_app.core.chat import MAX_MESSAGE_CHARS
from r42_app.core.messages import msg
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)


class WindowMixin(rx.State, mixin=True):
    """The window's half of ChatState. (`type(self).x` is ChatState's own event handler x.)"""

    is_open: bool = False
    availability: str = ""  # "" (R42 answers) | "disabled" (off for the tenant) | "denied" (no qa_help)
    my_capabilities: list[str] = []  # what R42 may do for this user, in words (account menu)
    show_capabilities: bool = False
    question_log: bool = False  # the tenant keeps the (anonymous) question log: the window says so, once
    # the ids of the users of this browser who closed that note (a shared PC: each learner is told once)
    privacy_seen: str = rx.LocalStorage("", name="r42.privacy_seen")
    # "Zet mijn naam erbij" (issue 44): the ratings given while it is on carry the learner's name for the admins;
    # off by default, and for this tab only
    sign_ratings: bool = False
    _keep_open: bool = False  # a citation chip was clicked: the window stays open on the page it opens

    async def _user(self, fresh: bool = False):
        auth = await self.get_state(AuthState)
        return await auth.user(fresh)

    @rx.event
    async def toggle(self):
        self.is_open = not self.is_open
        if self.is_open:
            return type(self).load_thread

    @rx.event
    def follow_source(self, covers_page: bool):
        """A source chip or link was followed. Beside the page the window stays open on the topic it opens; where
        it covers the page (a phone) it closes, so the topic is seen."""
        if covers_page:
            self.is_open, self._keep_open = False, False
        else:
            self._keep_open = True

    @rx.event
    def close(self):
        self.is_open = False

    @rx.event
    def page_view(self):
        """on_mount of the chat on every page: a new page view starts with the window closed (it covered
        pages), unless a citation chip led here. (Not on_load: Reflex runs on_load again when the websocket
        reconnects, say to another backend worker, and that must not close an open window.)"""
        self.announcement = ""  # said once, when the answer ended; a new page must not say it again
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
        self.question_log = chatbot.question_log
        self.my_capabilities = [CAPABILITY_LABELS[c] for c in CAPABILITIES if c in resolution.effective] \
            if chatbot.enabled else []

    @rx.event
    async def dismiss_privacy(self):
        """"Begrepen" on the note about the question log: not shown again to this user in this browser."""
        user = await self._user()
        if user is None:
            return
        seen = [i for i in self.privacy_seen.split(",") if i and i != user.id][-19:]
        self.privacy_seen = ",".join([*seen, user.id])

    @rx.event
    def set_sign_ratings(self, value: bool):
        self.sign_ratings = value is True

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
                return rx.toast.info(msg("chat.quiz_locked"))
        self.is_open = True
        return [type(self).load_thread, rx.call_script(f"window.r42Fill({json.dumps(question[:MAX_MESSAGE_CHARS])})")]
