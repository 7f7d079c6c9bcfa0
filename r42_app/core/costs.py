"""What a chat turn cost, per capability (pure).

Every model round reports its usage (input, output, cache write, cache read tokens). A round whose
response called tools is apportioned across the capabilities of those tools, split by the number
of calls per capability; a round without tool calls goes to the pseudo-capability `chat_general`, and a call made
for one purpose is accounted to it (`Round.accounted`: `question_rewrite`, the rewrite of a follow-up question).
A turn emits one cost event per capability it used, summed over its rounds. Tokens are split as
whole numbers with the largest-remainder rule, so a turn's events add up to exactly what the model
reported.

Prices are USD per million tokens, keyed by model id; cache writes cost 1.25× and cache reads 0.1×
the input rate unless the table says otherwise. One credit is USD 0.001 of model cost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from r42_app.core.capabilities import CAPABILITIES, CHAT_GENERAL, capability_from_tool_name
from r42_app.core.errors import UserError
from r42_app.core.messages import msg

USD_PER_CREDIT = 0.001
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1
CHAT_STREAM, TOOL_CALL = "chat-stream", "tool-call"  # the event's `capability` field: a round that answered, or tools


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens

    @classmethod
    def from_sdk(cls, usage: Mapping[str, Any]) -> Usage:
        """From the SDK's names (`cache_creation_input_tokens`, `cache_read_input_tokens` may be None)."""
        def n(key: str) -> int:
            value = usage.get(key)
            return int(value) if isinstance(value, (int, float)) and value > 0 else 0

        return cls(n("input_tokens"), n("output_tokens"), n("cache_creation_input_tokens"),
                   n("cache_read_input_tokens"))


@dataclass(frozen=True)
class Round:
    """One model call of a turn: what it used and the tools its response called (by name)."""

    usage: Usage
    tool_names: tuple[str, ...] = ()
    accounted: str = ""  # a call made for one purpose: all of it goes to this pseudo-capability (question_rewrite)

    @property
    def capabilities(self) -> tuple[str, ...]:
        """One entry per tool call; a round without calls (or a call of an unknown tool) is chat_general."""
        if self.accounted:
            return (self.accounted,)
        if not self.tool_names:
            return (CHAT_GENERAL,)
        return tuple(capability_from_tool_name(n) or CHAT_GENERAL for n in self.tool_names)


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None

    def cost(self, usage: Usage) -> float:
        write = self.cache_write if self.cache_write is not None else self.input * CACHE_WRITE_FACTOR
        read = self.cache_read if self.cache_read is not None else self.input * CACHE_READ_FACTOR
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_write_tokens * write + usage.cache_read_tokens * read) / 1_000_000


def _split(total: int, weights: dict[str, int]) -> dict[str, int]:
    """`total` split in whole numbers by weight (largest remainder; ties by name): exact, deterministic."""
    whole = sum(weights.values())
    shares = {k: total * w // whole for k, w in weights.items()}
    left = total - sum(shares.values())
    by_remainder = sorted(weights, key=lambda k: (-(total * weights[k] % whole), k))
    for k in by_remainder[:left]:
        shares[k] += 1
    return shares


def apportion(rounds: Iterable[Round]) -> dict[str, Usage]:
    """Usage per capability over a turn's rounds (see the module docstring)."""
    out: dict[str, Usage] = {}
    for r in rounds:
        counts: dict[str, int] = {}
        for capability in r.capabilities:
            counts[capability] = counts.get(capability, 0) + 1
        if len(counts) == 1:  # one capability (most rounds): all of the round's usage is its own
            [capability] = counts
            out[capability] = out.get(capability, Usage()) + r.usage
            continue
        parts = {f.name: _split(getattr(r.usage, f.name), counts) for f in fields(Usage)}
        for capability in counts:
            share = Usage(*(parts[f.name][capability] for f in fields(Usage)))
            out[capability] = out.get(capability, Usage()) + share
    return out


def credits_for(usd: float) -> float:
    return round(usd / USD_PER_CREDIT, 6)


def event_id(turn_id: str, capability: str) -> str:
    """A PocketBase record id (15 characters of [a-z0-9]) that is the same every time for this turn and
    capability: persisting an event twice is refused as a duplicate, never counted twice."""
    return hashlib.sha256(f"{turn_id}:{capability}".encode()).hexdigest()[:15]


@dataclass(frozen=True)
class AICostEvent:
    id: str
    tenant: str
    user: str
    turn_id: str
    capability: str  # chat-stream | tool-call
    source: str  # chatbot:<capability>
    model: str
    usage: Usage
    cost_usd: float
    credits: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tenant": self.tenant, "user": self.user, "turn_id": self.turn_id,
                "capability": self.capability, "source": self.source, "model": self.model,
                "input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens, "cache_read_tokens": self.usage.cache_read_tokens,
                "cost_usd": self.cost_usd, "credits": self.credits}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AICostEvent:
        usage = Usage(int(d.get("input_tokens", 0)), int(d.get("output_tokens", 0)),
                      int(d.get("cache_write_tokens", 0)), int(d.get("cache_read_tokens", 0)))
        return cls(str(d["id"]), str(d["tenant"]), str(d.get("user", "")), str(d.get("turn_id", "")),
                   str(d.get("capability", "")), str(d.get("source", "")), str(d.get("model", "")), usage,
                   float(d.get("cost_usd", 0.0)), float(d.get("credits", 0.0)))


def cost_events(turn_id: str, tenant_id: str, user_id: str, model: str, rounds: Iterable[Round],
                price: Price) -> list[AICostEvent]:
    """One event per capability the turn used (none for a turn that used no tokens)."""
    out = []
    for capability, usage in sorted(apportion(rounds).items()):
        if usage.total == 0:
            continue
        usd = round(price.cost(usage), 9)
        out.append(AICostEvent(event_id(turn_id, capability), tenant_id, user_id, turn_id,
                               TOOL_CALL if capability in CAPABILITIES else CHAT_STREAM, f"chatbot:{capability}",
                               model, usage, usd, credits_for(usd)))
    return out


def price_for(table: Mapping[str, Price], model: str, default: Price) -> tuple[Price, bool]:
    """The model's price, or the default and False (the caller warns once)."""
    price = table.get(model)
    return (price, True) if price is not None else (default, False)


# -- credits -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TenantCredits:
    """A tenant's remaining AI credit (1 credit = USD 0.001); `unlimited` is a plan, not a huge number."""

    credits: float
    unlimited: bool = False
    plan: str = ""


class QuotaExceeded(UserError):
    """The tenant has too little AI credit for a model call; `metadata` says how much and where to upgrade.
    The code is `credits.<reason>`."""

    code_prefix = "credits."

    def __init__(self, reason: str, metadata: dict[str, Any]):
        super().__init__(self.code_prefix + reason, f"AI credit refused: {reason}")
        self.reason = reason
        self.metadata = metadata


def assert_tenant_ai_credit_access(tenant: TenantCredits, minimum_credits: float = 1, upgrade_url: str = "") -> None:
    """Raise QuotaExceeded unless the tenant may start a model call: an unlimited plan, or at least
    `minimum_credits` left. Concurrent turns on the last credits can overdraw by what those turns use."""
    if tenant.unlimited or tenant.credits >= minimum_credits:
        return
    raise QuotaExceeded("no_credits", {"credits_remaining": round(max(tenant.credits, 0.0), 6),
                                       "minimum_credits": minimum_credits, "plan": tenant.plan or "standaard",
                                       "upgrade_url": upgrade_url})


# -- the cost report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DailyRow:
    """One `ai_cost_daily` row: a tenant's cost for one UTC day, user, source and model."""

    day: str
    user: str  # display name ("" for events without a user)
    source: str  # chatbot:<capability>
    model: str
    events: int
    usage: Usage
    cost_usd: float
    credits: float


@dataclass(frozen=True)
class CostLine:
    """Totals for one group (a capability, a user, a day, or everything)."""

    key: str
    events: int = 0
    usage: Usage = Usage()
    cost_usd: float = 0.0
    credits: float = 0.0

    def __add__(self, row: DailyRow | CostLine) -> CostLine:
        return CostLine(self.key, self.events + row.events, self.usage + row.usage,
                        round(self.cost_usd + row.cost_usd, 9), round(self.credits + row.credits, 6))

    @property
    def cache_read_share(self) -> float:
        """Cache reads as a share of all input tokens (fresh input + cache writes + cache reads)."""
        all_input = self.usage.input_tokens + self.usage.cache_write_tokens + self.usage.cache_read_tokens
        return self.usage.cache_read_tokens / all_input if all_input else 0.0


@dataclass(frozen=True)
class CostReport:
    since: str
    until: str
    total: CostLine
    by_capability: tuple[CostLine, ...]  # most expensive first
    by_user: tuple[CostLine, ...]  # most expensive first
    days: tuple[str, ...]  # every day of the range, for the chart
    by_day: dict[str, dict[str, float]]  # day -> capability -> USD


def capability_of(source: str) -> str:
    return source.split(":", 1)[1] if source.startswith("chatbot:") else source


def build_report(rows: Iterable[DailyRow], days: Iterable[str], since: str, until: str) -> CostReport:
    """Totals, per capability, per user and per day from rollup rows (never from single events)."""
    total = CostLine("total")
    per_cap: dict[str, CostLine] = {}
    per_user: dict[str, CostLine] = {}
    days = tuple(days)
    by_day: dict[str, dict[str, float]] = {d: {} for d in days}
    for row in rows:
        cap = capability_of(row.source)
        total = total + row
        per_cap[cap] = per_cap.get(cap, CostLine(cap)) + row
        who = row.user or msg("costs.unknown_user")
        per_user[who] = per_user.get(who, CostLine(who)) + row
        if row.day in by_day:
            by_day[row.day][cap] = round(by_day[row.day].get(cap, 0.0) + row.cost_usd, 9)

    def ranked(lines: dict[str, CostLine]) -> tuple[CostLine, ...]:
        return tuple(sorted(lines.values(), key=lambda line: (-line.cost_usd, line.key)))

    return CostReport(since, until, total, ranked(per_cap), ranked(per_user), days, by_day)
