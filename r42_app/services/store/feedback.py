"""Thumbs up/down on R42's answers: stored with the question, the answer and its citations, read by the
tenant's admins on `/admin/feedback`. PocketBase's rules and hooks hold the same line for every writer:
one rating per user and message (a new one replaces the old one), bounded texts, and at most
FEEDBACK_PER_MINUTE ratings a minute per user (pb_hooks/r42_rules.js).

The privacy rule (issue 44): admins see what was rated, never who, unless the learner signed that rating. Who rated
is kept in a hidden field (`user`: one rating per user and message, the per-user rate, `r42 user forget`) that only
the app's superuser connection reads, and `recent` does not even fetch it; a signed rating names its `signer`."""

from __future__ import annotations

import dataclasses
from typing import Any

from r42_app.core.chat_view import valid_citation
from r42_app.core.errors import UserError
from r42_app.services.store.pb import PBError, PocketBase, quote

RATINGS = ("up", "down")
MAX_QUESTION = 2000  # the schema's max (pb_migrations/1764400800_r42_limits.js); longer texts are cut here
MAX_ANSWER = 8000  # R42's answer: ~1,024 tokens a model round fit; a longer one is kept from the start
# PocketBase also caps a row at 24,000 bytes (pb_hooks/r42_rules.js): the texts are cut to these byte budgets.
QUESTION_BYTES, ANSWER_BYTES, CITATIONS = 4000, 16000, 10
MAX_REASON = 500  # a thumbs-down's optional "Wat klopte er niet?" (pb_migrations/1764401200_r42_feedback_reason.js)


def _cut(text: str, chars: int, size: int) -> str:
    """`text` cut to `chars` characters and `size` bytes of UTF-8, between characters."""
    text = text[:chars]
    data = text.encode("utf-8")
    return text if len(data) <= size else data[:size].decode("utf-8", "ignore")
FEEDBACK_PER_MINUTE = 20  # per user; pb_hooks/r42_rules.js counts them for every writer
# what the feedback page reads of a rating: never `user` (who rated), only a signed rating's signer
SHOWN_FIELDS = "created,rating,question,answer,citations,reason,signer,expand.signer.name,expand.signer.email"


class FeedbackError(UserError, ValueError):
    """A rating refused for a reason the user can act on."""


@dataclasses.dataclass(frozen=True)
class Feedback:
    created: str
    user: str  # the rater's name when they signed the rating, else ""
    rating: str
    question: str
    answer: str
    citations: list[str]
    # each source as stored: slug, label and, when the chat passed them, its ref (the N of [ref:N]) and anchor
    sources: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    reason: str = ""  # a thumbs-down's optional reason
    signed: bool = False  # the rater chose to put their name with it


class FeedbackStore:
    def __init__(self, pb: PocketBase):
        self.pb = pb

    def record(self, tenant_id: str, user_id: str, rating: str, question: str, answer: str,
               citations: list[dict[str, Any]], message_id: str = "", signed: bool = False) -> None:
        """One rating of one answer; a second rating of the same message replaces the first (PocketBase
        does that in one transaction, so a refused rating leaves the earlier one). `signed`: the user chose to
        put their name with it (the tenant's admins then see it); otherwise they see no one. Raises FeedbackError
        with a message for the user when it is refused for a reason they can act on."""
        if rating not in RATINGS:
            raise FeedbackError("feedback.bad_rating", f"rating must be one of {RATINGS}")
        if not tenant_id or not user_id or not message_id or not answer.strip():
            raise FeedbackError("feedback.no_answer", "there is no answer to rate")
        # only citations of R42's shape (they come from the browser's stored thread): the same rule the hooks
        # hold every other writer to, and the one the feedback page's chips are made by
        cites = [{"slug": c["slug"], "label": _cut(c["label"], 120, 200),
                  **({"ref": c["ref"]} if isinstance(c.get("ref"), int) else {}),
                  **({"anchor": c["anchor"]} if c.get("anchor") else {})}
                 for c in citations if isinstance(c, dict)
                 and valid_citation(c.get("slug"), c.get("anchor") or "", c.get("label"))][:CITATIONS]
        try:
            self.pb.create("chat_feedback", {"tenant": tenant_id, "user": user_id, "rating": rating,
                                             "message_id": message_id[:64],
                                             "question": _cut(question, MAX_QUESTION, QUESTION_BYTES),
                                             "answer": _cut(answer, MAX_ANSWER, ANSWER_BYTES), "citations": cites,
                                             "signer": user_id if signed else ""})
        except PBError as exc:
            if exc.status == 429:
                raise FeedbackError("feedback.too_fast", "too many ratings in a minute") from exc
            raise

    def add_reason(self, tenant_id: str, user_id: str, message_id: str, reason: str) -> bool:
        """The reason a user gives after their thumbs-down on `message_id` (trimmed, at most MAX_REASON
        characters; empty clears it). False when there is no such rating of theirs (it was replaced by a
        thumbs-up meanwhile, say): nothing is written then."""
        reason = " ".join(reason.split())
        if len(reason) > MAX_REASON:
            raise FeedbackError("feedback.reason_too_long", f"a reason is at most {MAX_REASON} characters")
        if not tenant_id or not user_id or not message_id:
            return False
        row = self.pb.first("chat_feedback", f"tenant = {quote(tenant_id)} && user = {quote(user_id)} && "
                                             f'message_id = {quote(message_id[:64])} && rating = "down"')
        if row is None:
            return False
        self.pb.update("chat_feedback", row["id"], {"reason": reason})
        return True

    def recent(self, tenant_id: str, limit: int = 200) -> list[Feedback]:
        """The tenant's latest ratings, newest first (a malformed row is shown as far as it can be). Who rated is
        not fetched: only a signed rating's signer, by name."""
        rows = self.pb.list("chat_feedback", filter=f"tenant = {quote(tenant_id)}", sort="-created",
                            per_page=limit, expand="signer", fields=SHOWN_FIELDS).get("items", [])
        out = []
        for row in rows:
            signer = (row.get("expand") or {}).get("signer") or {}
            signed = bool(row.get("signer")) and isinstance(signer, dict)
            cites = row.get("citations") if isinstance(row.get("citations"), list) else []
            out.append(Feedback(str(row.get("created", ""))[:16].replace("T", " "),
                                str(signer.get("name") or signer.get("email") or "?") if signed else "",
                                row.get("rating") if row.get("rating") in RATINGS else "?",
                                str(row.get("question") or ""), str(row.get("answer") or ""),
                                [str(c.get("label") or c.get("slug") or "") for c in cites if isinstance(c, dict)],
                                [c for c in cites if isinstance(c, dict)], str(row.get("reason") or ""), signed))
        return out
