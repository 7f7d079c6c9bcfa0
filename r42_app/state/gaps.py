"""GapsState: `/admin/gaps` ("Kennishiaten"), what learners ask that the knowledge base cannot answer, in groups of
similar questions (services/gaps.py; the CLI's `r42 gaps report` is the same report). Admins of the tenant only."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, date, datetime, time, timedelta

import reflex as rx
from babel.dates import format_datetime

from r42_app.container import services
from r42_app.core.dates import day_text, parse_day
from r42_app.core.gaps import MIN_ASKERS_SHOWN
from r42_app.core.messages import LOCALES, current_language, msg
from r42_app.core.retrieval import topic_url
from r42_app.core.text import clip
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin

log = logging.getLogger(__name__)
PER_PAGE = 10
EXAMPLES_SHOWN = 5
DEFAULT_DAYS = 30


def when_text(moment: datetime) -> str:
    """"3 dec 2026, 14:05" (UTC), the month in the reader's language ("3 Dec 2026, 14:05"; Babel's)."""
    return format_datetime(moment.astimezone(UTC), "d MMM y, HH:mm", tzinfo=UTC, locale=LOCALES[current_language()])


def _topic_labels(user) -> dict[str, str]:
    """The tenant's topic names by slug, from the retriever's cached index (blocking: call it in a thread). Empty
    when the index is not at hand: the page then names the closest topics by their slugs."""
    try:
        return {t.slug: t.label for t in services().retriever.index(user.tenant).topics}
    except Exception as exc:
        log.warning("topic labels for the gaps page not available: %s", exc)
        return {}


@dataclasses.dataclass
class GapTopic:
    slug: str = ""
    url: str = ""
    label: str = ""  # the topic's name (its slug when the index is not at hand)


EXAMPLE_CHARS = 200  # a question longer than this is shown cut, its whole text behind "Hele vraag"


@dataclasses.dataclass
class GapExample:
    short: str = ""  # the question on one line, cut at a word after EXAMPLE_CHARS
    full: str = ""  # the whole question, when `short` is cut; else ""


def example(question: str) -> GapExample:
    short = clip(question, EXAMPLE_CHARS)
    return GapExample(short, question if short != " ".join(question.split()) else "")


@dataclasses.dataclass
class GapRow:
    id: str = ""
    count: int = 0
    askers: str = ""  # "door 4 leerlingen", or "door minder dan 3 leerlingen": never a count below MIN_ASKERS_SHOWN
    last: str = ""
    status: str = "open"
    title: str = ""  # the group's heading: its newest Dutch question (core/gaps.py Gap.heading)
    examples: list[GapExample] = dataclasses.field(default_factory=list)
    more: int = 0  # questions beyond the examples shown
    closest: list[GapTopic] = dataclasses.field(default_factory=list)
    topic: str = ""  # the topic created from it
    topic_url: str = ""


@dataclasses.dataclass
class WeekBar:
    week: str = ""
    ungrounded: int = 0
    total: int = 0
    height: str = "0%"


class GapsState(AdminPageMixin, rx.State):
    rows: list[GapRow] = []
    since: str = ""
    until: str = ""
    search: str = ""
    range_error: str = ""
    page: int = 1
    weeks: list[WeekBar] = []
    busy_gap: str = ""

    @rx.var
    def since_text(self) -> str:
        """The range's first day as its field shows it ("01-12-2026")."""
        return day_text(date.fromisoformat(self.since)) if self.since else ""

    @rx.var
    def until_text(self) -> str:
        return day_text(date.fromisoformat(self.until)) if self.until else ""

    @rx.var
    def pages(self) -> int:
        return max(1, -(-len(self.rows) // PER_PAGE))

    @rx.var
    def visible(self) -> list[GapRow]:
        start = (self.page - 1) * PER_PAGE
        return self.rows[start:start + PER_PAGE]

    async def _refresh(self, user) -> None:
        since = datetime.combine(date.fromisoformat(self.since), time.min, UTC)
        until = datetime.combine(date.fromisoformat(self.until), time.max, UTC)
        search = self.search
        def rows() -> list[GapRow]:  # services().gaps is built in the thread too (the model, a secret file); the
            views = services().gaps.report(user.tenant_id, since, until, search)  # rows' text work is CPU: here too
            labels = _topic_labels(user)
            return [self._row(v, labels) for v in views]

        self.rows, weekly = await asyncio.gather(asyncio.to_thread(rows),
                                                 asyncio.to_thread(lambda: services().gaps.weekly(user.tenant_id)))
        self.page = min(self.page, self.pages) if self.rows else 1
        most = max((w[1] for w in weekly), default=0) or 1
        self.weeks = [WeekBar(str(int(week[-2:])), bad, total, f"{round(100 * bad / most)}%")
                      for week, bad, total in weekly]

    @staticmethod
    def _row(v, labels: dict[str, str]) -> GapRow:
        examples = v.gap.examples(20)
        shown = v.gap.askers_shown
        askers = msg("gaps.askers", count=shown) if shown else msg("gaps.askers_few", minimum=MIN_ASKERS_SHOWN)
        return GapRow(v.gap.id, v.gap.count, askers, when_text(v.gap.last), v.status,
                      v.gap.heading(), [example(q) for q in examples[:EXAMPLES_SHOWN]],
                      max(0, len(examples) - EXAMPLES_SHOWN),
                      [GapTopic(s, topic_url(s), labels.get(s) or s) for s in v.gap.closest],
                      v.topic, topic_url(v.topic) if v.topic else "")

    @rx.event
    async def load(self):
        """on_load of `/admin/gaps`: the last 30 days."""
        user = await self._admin()
        if user is None:
            return
        today = datetime.now(UTC).date()
        self.since, self.until = (today - timedelta(days=DEFAULT_DAYS - 1)).isoformat(), today.isoformat()
        self.search, self.range_error, self.page = "", "", 1
        self.loading = True
        yield
        await self._reload(user, "gaps.load_failed")

    @rx.event
    async def apply(self, form: dict):
        """"Toon": another range of days, or a search."""
        user = await self._admin()
        if user is None:
            return
        try:
            since, until = parse_day(str(form.get("since", ""))), parse_day(str(form.get("until", "")))
            if since > until:
                raise ValueError("since after until")
        except ValueError:
            self.range_error = msg("gaps.bad_range")
            return
        self.since, self.until, self.range_error = since.isoformat(), until.isoformat(), ""
        self.search, self.page = str(form.get("search", ""))[:200], 1
        await self._reload(user, "gaps.load_failed", show_loading=False)

    @rx.event
    def go_to(self, page: int):
        self.page = max(1, min(int(page), self.pages))

    @rx.event
    async def ignore(self, gap_id: str):
        """"Negeren": the group leaves the list (the CLI's --all still shows it)."""
        user = await self._admin(fresh=True)
        if user is None:
            yield rx.toast.error(msg("gaps.refused"))
            return
        self.busy_gap = gap_id
        yield
        try:
            await asyncio.to_thread(
                lambda: services().gaps.decide(user.tenant_id, gap_id, "ignored", "", user.email))
        except (PBError, ValueError) as exc:
            log.error("ignoring gap %s failed: %s", gap_id, exc)
            self.busy_gap = ""
            yield rx.toast.error(msg("gaps.save_failed"))
            return
        self.rows = [r for r in self.rows if r.id != gap_id]
        self.page = min(self.page, self.pages)
        self.busy_gap = ""
        yield rx.toast.success(msg("gaps.ignored"))

    @rx.event
    def create_topic(self, gap_id: str):
        """"Onderwerp aanmaken": the topic editor, prefilled from the group's questions."""
        return rx.redirect(f"/admin/topics/new?gap={gap_id}")
