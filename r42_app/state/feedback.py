"""FeedbackState: `/admin/feedback`, the thumbs up and down the tenant's users gave R42's answers."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import reflex as rx

from r42_app.container import services
from r42_app.core.chat_view import chips, display, stored_citations
from r42_app.core.messages import msg
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)


@dataclasses.dataclass
class FeedbackSource:
    label: str = ""
    href: str = ""  # a topic of the tenant (a validated citation): the answer's chips are made of these only


@dataclasses.dataclass
class FeedbackRow:
    when: str = ""
    user: str = ""  # the rater's name when they signed the rating, else "Zonder naam" (the privacy rule, issue 44)
    signed: bool = False
    rating: str = ""
    question: str = ""
    answer: str = ""
    sources: str = ""
    display: str = ""  # the answer as markdown, its [ref:N] as links to the cited topics (as in the chat)
    source_links: list[FeedbackSource] = dataclasses.field(default_factory=list)
    reason: str = ""  # what the user said was wrong (a thumbs-down's optional reason)


class FeedbackState(rx.State):
    loading: bool = True
    load_error: str = ""
    rows: list[FeedbackRow] = []
    show: str = "all"  # all | up | down
    ups: int = 0
    downs: int = 0

    @rx.var
    def visible(self) -> list[FeedbackRow]:
        return [r for r in self.rows if self.show == "all" or r.rating == self.show]

    @rx.event
    async def load(self):
        user = await (await self.get_state(AuthState)).admin()
        if user is None:
            return
        self.loading, self.load_error = True, ""
        yield
        try:
            found = await asyncio.to_thread(services().feedback.recent, user.tenant_id)
        except PBError as exc:
            log.error("loading feedback failed: %s", exc)
            self.load_error = msg("feedback.load_failed")
            found = []
        self.rows = await asyncio.to_thread(lambda: [self._row(f) for f in found])  # every answer read: CPU
        self.ups = sum(1 for f in found if f.rating == "up")
        self.downs = sum(1 for f in found if f.rating == "down")
        self.loading = False

    @staticmethod
    def _row(f) -> FeedbackRow:
        cites = stored_citations(f.answer, f.sources)
        return FeedbackRow(f.created, f.user if f.signed else msg("feedback.unsigned"), f.signed, f.rating,
                           f.question, f.answer, ", ".join(f.citations),
                           display(f.answer, cites),
                           [FeedbackSource(c.label, c.href) for c in chips(cites)],
                           f.reason)

    @rx.event
    def set_show(self, value: str | list[str]):
        value = value[0] if isinstance(value, list) and value else value
        self.show = value if value in ("all", "up", "down") else "all"
