"""The chat window's thread as the browser keeps it: localStorage under `chat:thread:{userId}`, merged with what
other tabs store, wiped on sign-out. ChatState (state/chat.py) takes these events in as a mixin."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import reflex as rx

from r42_app.container import services
from r42_app.core.chat_view import UIMessage, from_thread, to_thread
from r42_app.core.messages import msg
from r42_app.core.thread import cleared_at, greeting, merge, parse, removed_ids, serialise, storage_key
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)


def topic_labels(user: Any, messages: list[Any]) -> dict[str, str]:
    """The tenant's topic labels by slug, for proposals among `messages` that link to existing topics (read from
    the retriever's cached index; blocking: call it in a thread). Empty when there is no proposal or no index."""
    if user is None or not user.tenant_id or not any(m.delta for m in messages):
        return {}
    try:
        return {t.slug: t.label for t in services().retriever.index(user.tenant).topics}
    except Exception as exc:  # a proposal is still readable by its ids
        log.warning("topic labels for proposal cards not available: %s", exc)
        return {}


def _stored(raw: Any) -> tuple[tuple[list[Any] | None, str], float, list[str]]:
    """The stored thread read: (parse's messages and problem, when it was cleared, the ids taken out). The
    browser sends up to 400,000 characters: reading them is CPU, done in a thread."""
    return parse(raw), cleared_at(raw), removed_ids(raw)


def _shown(messages: list[Any], labels: dict[str, str]) -> list[UIMessage]:
    """The stored messages as the window shows them (each answer's chips and proposal read): in a thread too."""
    return [from_thread(m, labels) for m in messages]


def _read_thread(user_id: str, callback):
    """Ask the browser for this user's stored thread; `callback` receives it (or None)."""
    return rx.call_script(f"window.localStorage.getItem({json.dumps(storage_key(user_id))})", callback=callback)


class ThreadMixin(rx.State, mixin=True):
    """The stored thread's part of ChatState (`forget` also closes the window: WindowMixin's is_open).
    (`type(self).x` is ChatState's own event handler x.)"""

    messages: list[UIMessage] = []
    notice: str = ""
    error: str = ""
    mark: str = "idle"  # idle | typing | error
    offline: bool = False
    streaming: bool = False
    queued: str = ""  # a question typed while R42 was answering: sent when the answer ends
    announcement: str = ""  # the one polite live-region text when an answer has ended (done, stopped, failed)
    editing: str = ""  # the id of the last question while it is being edited (it stays until the edit is sent)
    reason_for: str = ""  # the answer whose thumbs-down asks "Wat klopte er niet?" (optional)
    _user_id: str = ""
    _cleared: float = 0.0  # when this user's thread was last cleared (in any tab)
    _removed: list[str] = []  # ids of messages taken out (regenerate, edit), so other tabs drop them too

    async def _user(self, fresh: bool = False):
        auth = await self.get_state(AuthState)
        return await auth.user(fresh)

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
        return _read_thread(user.id, type(self).receive_thread)

    @rx.event
    async def receive_thread(self, raw: str | None):
        user = await self._user()
        if user is None or user.id != self._user_id:
            return
        (messages, problem), self._cleared, self._removed = await asyncio.to_thread(_stored, raw)
        if messages is None:
            log.warning("replacing an unreadable stored thread (%s) for user %s", problem, user.id)
            self.notice = msg("chat.thread_unreadable")
            messages = []
        if self.messages:  # asked before the stored thread came back: a late read never replaces what is here
            if self.streaming:  # the answer's end saves, and its merge (follow_thread) brings the stored part in
                return
            messages = merge([to_thread(m) for m in self.messages if m.role != "notice" or m.content], messages,
                             set(self._removed))
        labels = await asyncio.to_thread(topic_labels, user, messages)
        self.messages = await asyncio.to_thread(_shown, messages, labels) or [from_thread(greeting(user.name,
                                                                                                   user.tenant_name))]
        if problem:
            return type(self).save_thread

    @rx.event
    async def save_thread(self):
        user = await self._user()
        if user is None or user.id != self._user_id:
            return
        data = serialise([to_thread(m) for m in self.messages if m.role != "notice" or m.content], self._cleared,
                         self._removed)
        # Merged by message id with what another tab may have stored meanwhile (r42SaveThread in r42_app.py).
        return rx.call_script(f"window.r42SaveThread({json.dumps(storage_key(user.id))}, {json.dumps(data)})",
                              callback=type(self).follow_thread)

    @rx.event
    async def follow_thread(self, raw: str | None):
        """The thread as stored after a merge, or after another tab saved (the `storage` event): this tab
        shows the union. Not while an answer streams here; the next save merges again."""
        user = await self._user()
        if user is None or user.id != self._user_id or self.streaming or not raw:
            return
        (messages, _problem), cleared, removed = await asyncio.to_thread(_stored, raw)
        if not messages:
            return
        self._removed = list(dict.fromkeys([*self._removed, *removed]))[-200:]
        mine = [to_thread(m) for m in self.messages if m.role != "notice" or m.content]
        if cleared > self._cleared:  # cleared in another tab: start from what it left
            self._cleared = cleared
            merged = messages
        else:  # never a step back: a placeholder stored earlier does not replace the answer that came since
            merged = merge(mine, messages, set(self._removed))
        if merged != mine:
            labels = await asyncio.to_thread(topic_labels, user, merged)
            self.messages = await asyncio.to_thread(_shown, merged, labels)

    @rx.event
    async def reload_thread(self):
        """Another tab changed this user's stored thread."""
        user = await self._user()
        if user is None or user.id != self._user_id:
            return
        return _read_thread(user.id, type(self).follow_thread)

    @rx.event
    async def clear_thread(self):
        """Wipe the stored thread and start again with the greeting."""
        user = await self._user()
        if user is None or self.streaming:
            return
        self.messages = [from_thread(greeting(user.name, user.tenant_name))]
        self.notice = self.error = self.editing = ""
        self.mark = "idle"
        self._cleared = time.time()  # other tabs drop what came before
        key = json.dumps(storage_key(user.id))
        return [rx.call_script(f"window.localStorage.removeItem({key})"), type(self).save_thread]

    @rx.event
    def forget(self, user_id: str = ""):
        """On sign-out: nothing of this user stays in the tab, nor in this browser's storage (a shared
        computer must not show the next person this user's conversation)."""
        user_id = user_id or self._user_id
        self.messages, self._user_id, self.is_open = [], "", False
        self.notice = self.error = self.queued = self.editing = self.announcement = ""
        self.mark = "idle"
        if user_id:
            return rx.call_script(f"window.localStorage.removeItem({json.dumps(storage_key(user_id))})")

