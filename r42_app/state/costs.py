"""CostsState: `/admin/costs`, the tenant's AI cost report and credits (admins of the tenant only).
Thin: the report is built in core from the daily rollup (services.costs.CostReports)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, date, datetime

import reflex as rx

from r42_app.container import services
from r42_app.core.capabilities import CAPABILITIES, CAPABILITY_LABELS, CHAT_GENERAL, QA_HELP, QUESTION_REWRITE
from r42_app.core.costs import USD_PER_CREDIT, CostLine
from r42_app.core.dates import day_text, parse_day, short_day
from r42_app.core.messages import N_, amount, current_language, msg, word
from r42_app.services.store.costs import CreditError, day_range
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin

log = logging.getLogger(__name__)

# the stacks of the per-day chart: what costs are apportioned to (qa_help has no tools of its own)
CHART_KEYS = (CHAT_GENERAL, *(c for c in CAPABILITIES if c != QA_HELP), QUESTION_REWRITE)
CHART_LABELS = {CHAT_GENERAL: N_("Antwoorden"), **CAPABILITY_LABELS, QUESTION_REWRITE: N_("Vervolgvragen begrijpen")}


def typed_amount(text: str) -> float:
    """A number of credits as the reader types it: "2500,5" (Dutch: a comma, or as before a dot, is the decimal
    point) or "2,500.5" (English: a comma groups thousands). ValueError when it is no number."""
    cleaned = str(text).strip().replace(" ", "").replace("\u00a0", "")
    cleaned = cleaned.replace(",", "") if current_language() == "en" else cleaned.replace(",", ".")
    return float(cleaned)


def usd(value: float) -> str:
    """$ 0,0015 / $ 0.0015 (the reader's separators; four decimals under a dollar)."""
    return "$\u00a0" + amount(value, 4 if abs(value) < 1 else 2)  # a non-breaking space: never "$" alone on a line


@dataclasses.dataclass
class CostRow:
    key: str = ""
    label: str = ""
    events: str = ""
    tokens: str = ""
    usd: str = ""
    credits: str = ""


def _row(line: CostLine, label: str) -> CostRow:
    return CostRow(line.key, label, amount(line.events, 0), amount(line.usage.total, 0), usd(line.cost_usd),
                   amount(line.credits))


class CostsState(AdminPageMixin, rx.State):
    since: str = ""
    until: str = ""
    range_error: str = ""
    events: int = 0
    total_usd: str = ""
    credits_used: str = ""
    credits_left: str = ""
    unlimited: bool = False
    out_of_credit: bool = False
    tokens: str = ""
    cache_share: str = ""
    per_day: list[dict] = []
    per_capability: list[dict] = []
    top_users: list[dict] = []
    capability_rows: list[CostRow] = []
    user_rows: list[CostRow] = []
    add_amount: str = ""
    amount_error: str = ""  # why the typed amount cannot be added, shown under the field until it is changed
    saving: bool = False
    shows_rewrite: bool = False  # the chart's stack for follow-up rewrites: when they are on, or cost in the range

    @rx.var
    def since_text(self) -> str:
        """The range's first day as its field shows it ("01-12-2026")."""
        return day_text(date.fromisoformat(self.since)) if self.since else ""

    @rx.var
    def until_text(self) -> str:
        return day_text(date.fromisoformat(self.until)) if self.until else ""

    def _range(self) -> tuple[date, date]:
        return date.fromisoformat(self.since), date.fromisoformat(self.until)

    async def _refresh(self, user) -> None:
        since, until = self._range()
        svc = services()
        report, credits = await asyncio.gather(asyncio.to_thread(svc.cost_reports.report, user.tenant, since, until),
                                               asyncio.to_thread(svc.credits.show, user.tenant))
        total = report.total
        self.events = total.events
        self.total_usd = usd(total.cost_usd)
        self.credits_used = amount(total.credits)
        self.unlimited = credits.unlimited
        self.credits_left = msg("credits.unlimited") if credits.unlimited else amount(credits.credits)
        self.out_of_credit = not credits.unlimited and credits.credits < 1
        self.tokens = amount(total.usage.total, 0)
        self.cache_share = f"{round(100 * total.cache_read_share)}%"
        self.shows_rewrite = svc.settings.question_rewrite or any(
            report.by_day[d].get(QUESTION_REWRITE, 0.0) > 0 for d in report.days)
        self.per_day = [{"day": short_day(date.fromisoformat(d)),
                         **{k: round(report.by_day[d].get(k, 0.0), 4) for k in CHART_KEYS}} for d in report.days]
        self.per_capability = [{"name": word(CHART_LABELS.get(line.key, line.key)), "usd": round(line.cost_usd, 4)}
                               for line in report.by_capability]  # the chart looks up no words: said here
        self.top_users = [{"name": line.key, "usd": round(line.cost_usd, 4)} for line in report.by_user[:10]]
        self.capability_rows = [_row(line, CHART_LABELS.get(line.key, line.key)) for line in report.by_capability]
        self.user_rows = [_row(line, line.key) for line in report.by_user]

    @rx.event
    async def load(self):
        """on_load of `/admin/costs`: this month so far (UTC)."""
        user = await self._admin()
        if user is None:
            return
        today = datetime.now(UTC).date()
        self.since, self.until, self.range_error = today.replace(day=1).isoformat(), today.isoformat(), ""
        self.loading = True
        yield
        await self._reload(user, "costs.load_failed")

    @rx.event
    async def set_range(self, form: dict):
        """"Toon": another range of days."""
        user = await self._admin()
        if user is None:
            return
        try:
            since, until = parse_day(str(form.get("since", ""))), parse_day(str(form.get("until", "")))
            day_range(since, until)
        except ValueError:
            self.range_error = msg("costs.bad_range")
            return
        self.since, self.until, self.range_error = since.isoformat(), until.isoformat(), ""
        await self._reload(user, "costs.load_failed", show_loading=False)

    @rx.event
    async def export_csv(self):
        """Every cost event of the range as a CSV download."""
        user = await self._admin()
        if user is None:
            return rx.toast.error(msg("costs.refused"))
        since, until = self._range()
        try:
            data = await asyncio.to_thread(services().cost_reports.events_csv, user.tenant, since, until)
        except PBError as exc:
            log.error("exporting the cost events failed: %s", exc)
            return rx.toast.error(msg("costs.export_failed"))
        return rx.download(data=data, filename=f"r42-kosten-{user.tenant.slug}-{self.since}-{self.until}.csv")

    @rx.event
    def set_add_amount(self, value: str):
        self.add_amount = str(value)[:20]
        self.amount_error = ""

    @rx.var
    def taking_off(self) -> bool:
        """A negative amount: the button takes credits off ("Afschrijven"), it does not add them."""
        return self.add_amount.strip().startswith("-")

    @rx.event
    async def add_credits(self):
        """Top up (or, with a negative amount, take off) the tenant's credits; audited."""
        user = await self._admin(fresh=True)
        if user is None:
            return rx.toast.error(msg("costs.refused"))
        try:
            added = typed_amount(self.add_amount)
        except ValueError:
            added = 0.0
        if added == 0:  # no number, or nothing to add ("0 credits toegevoegd" would say something happened)
            self.amount_error = msg("credits.bad_amount")
            return rx.call_script("document.getElementById('credits-amount')?.focus()")
        try:
            await asyncio.to_thread(services().credits.change, user.tenant, user.id, user.email, add=added)
        except CreditError as exc:
            log.warning("credit change refused for tenant %s: %s", user.tenant.slug, exc)
            return rx.toast.error(exc.user_message)
        self.add_amount = ""
        await self._refresh(user)
        if added < 0:  # taken off: not "added", and R42 may answer less, not again
            return rx.toast.success(msg("credits.removed", amount=amount(-added), usd=amount(-added * USD_PER_CREDIT)))
        return rx.toast.success(msg("credits.added", amount=amount(added), usd=amount(added * USD_PER_CREDIT)))
