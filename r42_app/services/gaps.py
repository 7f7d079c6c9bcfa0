"""The knowledge-gaps report (issue 28): a tenant's question log, embedded and grouped by core/gaps.py. The CLI
(`r42 gaps report`) and the admin page (/admin/gaps) share `GapsReport.report`.

A gap is "resolved" (opgelost) once a question like it, asked after its last miss, was answered grounded: the
knowledge base caught up. An admin's "Negeren" and a topic created from a gap are kept in the `knowledge_gaps`
collection, keyed by the gap's id (the id of its oldest question's row, so it stays while new questions join).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from r42_app.core.gaps import (
    RESOLVED_SIMILARITY,
    Asked,
    Gap,
    background_pool,
    centred,
    draft_topic,
    find_gaps,
    language,
)
from r42_app.core.gaps_background import DUTCH, ENGLISH
from r42_app.services.store.pb import PBError, PocketBase, quote
from r42_app.services.store.questions import QuestionLog

log = logging.getLogger(__name__)
Encoder = Callable[[Sequence[str]], np.ndarray]
STATUSES = ("open", "resolved", "ignored")
GAPS = "knowledge_gaps"
MAX_ROWS = 10_000  # the newest questions a report reads
VECTOR_CACHE = 50_000


def background(encode_queries: Encoder) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The general questions of core/gaps_background.py: their mean query embedding per language, and their
    centred vectors (core/gaps.py `background_pool`)."""
    vectors = np.asarray(encode_queries([*DUTCH, *ENGLISH]))
    return background_pool(vectors, ["nl"] * len(DUTCH) + ["en"] * len(ENGLISH))


def _when(value: str) -> datetime:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)


def _asked(row: dict) -> Asked | None:
    """A question log row as the report reads it; None for a row it cannot read (a malformed one is skipped)."""
    question = row.get("question")
    if not isinstance(question, str) or not question.strip() or not isinstance(row.get("id"), str):
        return None
    understood = row.get("understood")  # a follow-up as understood in its conversation (issue 47): grouped on that,
    follow_up = isinstance(understood, str) and bool(understood.strip())  # and it ends with the words typed
    if follow_up and isinstance(understood, str):
        question = understood
    listed = row.get("sources")
    sources: list = listed if isinstance(listed, list) else []
    score = row.get("best_score")
    return Asked(row["id"], question, str(row.get("user_key") or ""), _when(row.get("created", "")),
                 row.get("grounded") is True, float(score) if isinstance(score, (int, float)) else 0.0,
                 str(row.get("feedback") or ""), tuple(str(s) for s in sources if isinstance(s, str)), follow_up)


@dataclass
class GapView:
    """One group as the report shows it."""

    gap: Gap
    status: str = "open"
    topic: str = ""  # the topic created from it

    def to_json(self, examples: int = 20) -> dict:
        # "learners": the distinct learners, or None when fewer than MIN_ASKERS_SHOWN (the privacy rule, issue 44)
        return {"id": self.gap.id, "count": self.gap.count, "learners": self.gap.askers_shown,
                "last": self.gap.last.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ"),
                "examples": self.gap.examples(examples), "closest": list(self.gap.closest), "status": self.status,
                **({"topic": self.topic} if self.topic else {})}


class GapsReport:
    def __init__(self, pb: PocketBase, questions: QuestionLog, encode_queries: Encoder):
        self.pb = pb
        self.questions = questions
        self.encode = encode_queries
        self._background: dict[str, np.ndarray] | None = None
        self._pool: np.ndarray | None = None
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()  # (row id, question) -> vector
        self._lock = threading.Lock()  # the vector cache and the per-tenant locks
        self._embedding = threading.Lock()
        self._tenant_locks: dict[str, threading.Lock] = {}
        self._last_grouping: dict[str, tuple[int, list[Gap], dict[str, bool]]] = {}  # per tenant: (rows' key, …)

    def _embed(self, rows: Sequence[Asked]) -> np.ndarray:
        with self._embedding:
            if self._background is None:
                self._background, self._pool = background(self.encode)
            missing = [r for r in rows if (r.id, r.question) not in self._vectors]
            if missing:
                for r, v in zip(missing, np.asarray(self.encode([r.question for r in missing]))):
                    self._vectors[(r.id, r.question)] = v
                while len(self._vectors) > VECTOR_CACHE:
                    self._vectors.popitem(last=False)
            return np.stack([self._vectors[(r.id, r.question)] for r in rows]) if rows else np.zeros((0, 1))

    def decisions(self, tenant_id: str) -> dict[str, dict]:
        """The admins' decisions on this tenant's gaps: gap id -> {"status": "ignored"|"topic", "topic": slug}."""
        out = {}
        for row in self.pb.all(GAPS, filter=f"tenant = {quote(tenant_id)}"):
            out[str(row.get("gap"))] = {"status": str(row.get("status") or ""), "topic": str(row.get("topic") or "")}
        return out

    def _grouped(self, tenant_id: str) -> tuple[list[Gap], dict[str, bool]]:
        """The tenant's gaps over its whole question log (the retention window, newest MAX_ROWS), each with whether
        it is resolved. Grouping everything, whatever range is shown, keeps a gap's id (its oldest question's)
        the same on every page, in the editor's draft and in the CLI."""
        with self._tenant_lock(tenant_id):  # two admins opening the page at once: one grouping, not two
            rows = [a for r in self.questions.rows(tenant_id, limit=MAX_ROWS) if (a := _asked(r))]
            if not rows:
                return [], {}
            # the page asks twice per load (its list and its weekly chart): a log unchanged since the last grouping
            # is not grouped again
            key = hash(tuple((r.id, r.question, r.grounded, r.best_score, r.feedback) for r in rows))
            last = self._last_grouping.get(tenant_id)
            if last is not None and last[0] == key:
                return last[1], last[2]
            vectors = self._embed(rows)
            gaps = find_gaps(rows, vectors, self._background, self._pool)
            unit = centred(vectors, [language(r.question) for r in rows], self._background)
            resolved = self._resolved(gaps, rows, unit)
            self._last_grouping[tenant_id] = (key, gaps, resolved)
            return gaps, resolved

    def report(self, tenant_id: str, since: datetime | None = None, until: datetime | None = None,
               search: str = "", include_ignored: bool = False) -> list[GapView]:
        """The tenant's gaps with questions asked in [since, until], each shown with those questions only, most
        asked first; `search` keeps the groups with a question or a closest topic that contains it."""
        gaps, resolved = self._grouped(tenant_id)
        decided = self.decisions(tenant_id) if gaps else {}
        views = []
        for gap in gaps:
            shown = [q for q in gap.questions
                     if (since is None or q.created >= since) and (until is None or q.created <= until)]
            if not shown:
                continue
            decision = decided.get(gap.id, {})
            status = "ignored" if decision.get("status") == "ignored" else \
                "resolved" if resolved.get(gap.id) else "open"
            if status == "ignored" and not include_ignored:
                continue
            views.append(GapView(Gap(gap.id, shown, gap.closest), status, decision.get("topic", "")))
        views.sort(key=lambda v: (-v.gap.count, -v.gap.last.timestamp()))
        needle = search.strip().lower()
        if needle:
            views = [v for v in views if any(needle in q.question.lower() for q in v.gap.questions)
                     or any(needle in slug for slug in v.gap.closest)]
        return views

    @staticmethod
    def _resolved(gaps: Sequence[Gap], rows: Sequence[Asked], unit: np.ndarray) -> dict[str, bool]:
        """Per gap: a question like it, asked after its last miss, was answered grounded (and not voted down)."""
        answered = [i for i, r in enumerate(rows) if r.grounded and r.feedback != "down"]
        if not answered or not gaps:
            return {}
        index = {r.id: i for i, r in enumerate(rows)}
        vectors = unit[answered]
        times = np.array([rows[i].created.timestamp() for i in answered])
        out = {}
        for gap in gaps:
            centroid = unit[[index[q.id] for q in gap.questions]].mean(axis=0)
            centroid /= np.linalg.norm(centroid) or 1.0
            later = times > gap.last.timestamp()
            out[gap.id] = bool(np.any(later & (vectors @ centroid >= RESOLVED_SIMILARITY)))
        return out

    def _tenant_lock(self, tenant_id: str) -> threading.Lock:
        with self._lock:
            return self._tenant_locks.setdefault(tenant_id, threading.Lock())

    def gap(self, tenant_id: str, gap_id: str) -> Gap | None:
        """One gap with all its questions (the same ids as the page and the CLI); None when there is no such gap
        (any more)."""
        for view in self.report(tenant_id, include_ignored=True):  # every question: the same ids as the page
            if view.gap.id == gap_id:
                return view.gap
        return None

    def draft(self, tenant_id: str, gap_id: str) -> dict[str, str] | None:
        """A draft topic for one gap (core/gaps.py draft_topic), its content a frame with the group's questions;
        None when there is no such gap (any more). chat/gap_draft.py has the model write description and
        content from the closest topics."""
        gap = self.gap(tenant_id, gap_id)
        if gap is None:
            return None
        topic = draft_topic(gap)
        asked = "\n".join(f"- {q}" for q in gap.examples(10))
        topic["content"] = (f"## Wat leerlingen vroegen\n\n{asked}\n\n## Antwoord\n\n"
                            "(Concept: schrijf hier het antwoord.)")
        return topic

    def decide(self, tenant_id: str, gap_id: str, status: str, topic: str = "", actor: str = "") -> None:
        """Record an admin's decision on a gap: "ignored", or "topic" (a topic `topic` was created from it)."""
        if status not in ("ignored", "topic"):
            raise ValueError("status must be ignored or topic")
        existing = self.pb.first(GAPS, f"tenant = {quote(tenant_id)} && gap = {quote(gap_id)}")
        body = {"tenant": tenant_id, "gap": gap_id, "status": status, "topic": topic, "actor": actor[:120]}
        try:
            if existing is None:
                self.pb.create(GAPS, body)
            else:
                self.pb.update(GAPS, existing["id"], body)
        except PBError as exc:
            log.warning("storing the decision on gap %s failed: %s", gap_id, exc)
            raise

    def weekly(self, tenant_id: str, weeks: int = 12, now: datetime | None = None) -> list[tuple[str, int, int]]:
        """(ISO week "2026-W48", questions in a gap, all questions) for the last `weeks` weeks, oldest first. "In a
        gap" counts what the list counts: the questions of the groups it shows (not ignored ones, not junk), so the
        chart's bars and the list's "× gevraagd" add up alike (they did not when the chart counted every ungrounded
        question)."""
        now = now or datetime.now(UTC)
        start = (now - timedelta(weeks=weeks - 1, days=now.weekday())).replace(hour=0, minute=0, second=0,
                                                                                microsecond=0)
        counts: dict[str, list[int]] = {}
        for w in range(weeks):
            year, week, _ = (start + timedelta(weeks=w)).isocalendar()
            counts[f"{year}-W{week:02d}"] = [0, 0]
        for row in self.questions.rows(tenant_id, since=start, limit=MAX_ROWS):
            year, week, _ = _when(row.get("created", "")).isocalendar()
            key = f"{year}-W{week:02d}"
            if key in counts:
                counts[key][1] += 1
        for view in self.report(tenant_id, since=start):
            for q in view.gap.questions:
                year, week, _ = q.created.isocalendar()
                if (key := f"{year}-W{week:02d}") in counts:
                    counts[key][0] += 1
        return [(k, v[0], v[1]) for k, v in counts.items()]
