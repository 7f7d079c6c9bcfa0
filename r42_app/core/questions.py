"""The question log (issue 28): what one chat turn leaves behind for the knowledge-gaps report, pseudonymous.

A row holds the question (and, for a follow-up, the question as understood in its conversation: "Wat is
partnerpensioen? … En voor de kinderen?", core/conversation.py), the tenant, a user key, the channel and mode, what
retrieval found (the best score, the passage cosine, the topics offered and those cited), whether the answer was
grounded (core/relevance.py), whether the assistant was offline, and later the thumbs of the answer. The user key is
an HMAC of the user id under a key of the tenant (itself an HMAC of the deployment's secret and the tenant id): the
report says that one learner asked five times, never who, and the same learner has another key in another tenant.
The key is a hidden field (only the app reads it), and only who holds the secret (the app) can find a user's rows
again, to forget them.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from r42_app.core.text import clip

MAX_QUESTION_CHARS = 2000  # the collection's limit; a longer question is cut at a word
MAX_SOURCES = 10
DEFAULT_RETENTION_DAYS = 90
CHANNELS = ("window", "api")


def tenant_key(secret: str | bytes, tenant_id: str) -> bytes:
    """The tenant's own key for user keys, from the deployment's secret."""
    raw = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(raw, b"question-log|" + tenant_id.encode(), hashlib.sha256).digest()


def user_key(secret: str | bytes, tenant_id: str, user_id: str) -> str:
    """32 hex characters: the same for one user in one tenant, unrelated across tenants, not reversible."""
    return hmac.new(tenant_key(secret, tenant_id), user_id.encode(), hashlib.sha256).hexdigest()[:32]


def clip_question(text: str, limit: int = MAX_QUESTION_CHARS) -> str:
    return clip(text, limit)


def clip_understood(text: str, limit: int = MAX_QUESTION_CHARS) -> str:
    """A question as understood, cut from the start when too long: it ends with the words the learner typed."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    tail = text[-(limit - 1):]
    space = tail.find(" ")
    return "…" + (tail[space + 1:] if 0 <= space < limit // 2 else tail)


@dataclass(frozen=True)
class QuestionEntry:
    """One turn's row of the log (`to_row` is what PocketBase stores)."""

    tenant_id: str
    user_key: str
    question: str
    channel: str = "window"
    mode: str = "hybrid"
    mode_used: str = ""
    best_score: float = 0.0
    semantic: float | None = None
    sources: Sequence[str] = field(default_factory=tuple)  # the topics retrieval offered, best first
    cited: Sequence[str] = field(default_factory=tuple)  # the topics the answer cited
    grounded: bool = False
    offline: bool = False
    turn_id: str = ""
    understood: str = ""  # the question as understood in its conversation, when it leans on it (issue 47)

    def to_row(self) -> dict[str, Any]:
        if self.channel not in CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(CHANNELS)}")
        sources = list(dict.fromkeys(str(s) for s in self.sources))[:MAX_SOURCES]
        cited = list(dict.fromkeys(str(s) for s in self.cited))[:MAX_SOURCES]
        return {"tenant": self.tenant_id, "user_key": self.user_key, "question": clip_question(self.question),
                "channel": self.channel, "mode": self.mode, "mode_used": self.mode_used[:16],
                "best_score": round(float(self.best_score), 4),
                "semantic": None if self.semantic is None else round(float(self.semantic), 4),
                "sources": sources, "cited": cited, "grounded": bool(self.grounded), "offline": bool(self.offline),
                "turn_id": self.turn_id, "understood": clip_understood(self.understood)}


def retention_cutoff(now: datetime, days: int) -> datetime:
    """Rows created before this go: `days` (R42_QUESTION_LOG_DAYS) back from `now`."""
    if days < 1:
        raise ValueError("the retention is at least one day")
    return now - timedelta(days=days)
