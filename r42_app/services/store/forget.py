"""`r42 user forget` (issue 28): everything of one user deleted or anonymised, in a fixed order, each step one that
can run again (a forget interrupted half-way is finished by running it again).

- deleted: the user's questions in the question log, their ratings of answers (question and answer text),
  their access row, their quiz sessions, and finally the account itself;
- kept without the user: AI cost events and their daily totals (the tenant's costs and credits stay whole),
  suggestions (the proposal stays in the queue or its history, "anoniem"), and the reviews they made;
- kept with a pseudonym: audit rows (their user emptied; the user's id, e-mail and name replaced by the pseudonym
  wherever they occur in the arguments and the outcome, confirmations of tool calls included), the copies of
  cost events in the outbox, and the admins' decisions on knowledge gaps (their actor).

The pseudonym is "verwijderd-" plus the first 8 characters of the user's question-log key: the same in every row,
unrelated to the user id, and not something anyone can turn back into the user. The forget itself is audited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from r42_app.core.identity import Tenant
from r42_app.services.store.audit import audit_request
from r42_app.services.store.pb import BatchRequest, PocketBase, quote
from r42_app.services.store.questions import QuestionLog

BATCH = 200
FORGET_TOOL = "r42:user.forget"


class ForgetError(Exception):
    pass


def _replaced(value, needles: set[str], pseudonym: str):
    """`value` (JSON: dicts, lists, strings) with every occurrence of the needles replaced, case-insensitively."""
    if isinstance(value, dict):
        return {k: _replaced(v, needles, pseudonym) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, needles, pseudonym) for v in value]
    if isinstance(value, str):
        for needle in sorted((n for n in needles if n), key=len, reverse=True):
            value = re.sub(re.escape(needle), pseudonym, value, flags=re.I)
    return value


@dataclass
class Forgotten:
    """What `forget` did, per collection: rows deleted and rows anonymised."""

    pseudonym: str
    deleted: dict[str, int] = field(default_factory=dict)
    anonymised: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"pseudonym": self.pseudonym, "deleted": self.deleted, "anonymised": self.anonymised}


class UserForgetter:
    def __init__(self, pb: PocketBase, questions: QuestionLog):
        self.pb = pb
        self.questions = questions

    def _ids(self, collection: str, flt: str) -> list[str]:
        return [r["id"] for r in self.pb.list(collection, filter=flt, fields="id", per_page=BATCH).get("items", [])]

    def _delete(self, collection: str, flt: str) -> int:
        done = 0
        while ids := self._ids(collection, flt):
            self.pb.batch([BatchRequest.delete(collection, i) for i in ids])
            done += len(ids)
        return done

    def _clear(self, collection: str, fld: str, user_id: str) -> int:
        done = 0
        flt = f"{fld} = {quote(user_id)}"
        while ids := self._ids(collection, flt):
            self.pb.batch([BatchRequest.update(collection, i, {fld: None}) for i in ids])
            done += len(ids)
        return done

    def _rewrite_json(self, collection: str, fld: str, flt: str, user_id: str, names: set[str], pseudonym: str,
                      clear_user: bool = False) -> int:
        """Every matching row: `fld` (JSON) with the user's id, e-mail and name replaced by the pseudonym wherever
        they occur, nested or inside a longer text; with `clear_user`, its `user` relation emptied too. A row whose
        JSON cannot be read keeps it as it is."""
        done = 0
        for row in self.pb.all(collection, filter=flt):
            body: dict = {}
            stored = row.get(fld)
            if isinstance(stored, (dict, list, str)):
                changed = _replaced(stored, {user_id, *names}, pseudonym)
                if changed != stored:
                    body[fld] = changed
            if clear_user and row.get("user") == user_id:
                body["user"] = None
            if body:
                self.pb.update(collection, row["id"], body)
                done += 1
        return done

    def forget(self, tenant: Tenant, email: str) -> Forgotten:
        user = self.pb.first("users", f"tenant = {quote(tenant.id)} && email = {quote(email.strip())}")
        if user is None:
            raise ForgetError(f"no user {email} in tenant {tenant.slug}")
        uid = user["id"]
        pseudonym = "verwijderd-" + self.questions.user_key(tenant.id, uid)[:8]
        out = Forgotten(pseudonym)
        out.deleted["question_log"] = self.questions.forget(tenant.id, uid)
        out.deleted["chat_feedback"] = self._delete("chat_feedback", f"user = {quote(uid)}")
        out.anonymised["suggestions"] = self._clear("suggestions", "user", uid)
        out.anonymised["suggestions_reviewed"] = self._clear("suggestions", "reviewed_by", uid)
        out.anonymised["ai_cost_events"] = self._clear("ai_cost_events", "user", uid)
        out.anonymised["ai_cost_daily"] = self._clear("ai_cost_daily", "user", uid)
        names = {str(user.get(k) or "") for k in ("email", "name")} - {""}
        mentions = "".join(f" || arguments ~ {quote(n)}" for n in sorted(names | {uid}))
        out.anonymised["audit_log"] = self._rewrite_json(
            "audit_log", "arguments", f"tenant = {quote(tenant.id)} && (user = {quote(uid)}{mentions})", uid, names,
            pseudonym, clear_user=True)
        out.anonymised["audit_log"] += self._rewrite_json(  # the outcome text of a tool call may name them too
            "audit_log", "outcome", f"tenant = {quote(tenant.id)} && (" + " || ".join(
                f"outcome ~ {quote(n)}" for n in sorted(names | {uid})) + ")", uid, names, pseudonym)
        out.anonymised["outbox"] = self._rewrite_json(  # the cost events already persisted keep a copy
            "outbox", "payload", f"payload ~ {quote(uid)}", uid, names, pseudonym)
        out.anonymised["knowledge_gaps"] = self._rewrite_json(  # an admin's decisions name them as actor
            "knowledge_gaps", "actor", f"tenant = {quote(tenant.id)} && (" + " || ".join(
                f"actor = {quote(n)}" for n in sorted(names)) + ")", uid, names, pseudonym) if names else 0
        out.deleted["chatbot_access"] = self._delete("chatbot_access", f"user = {quote(uid)}")
        out.deleted["quiz_sessions"] = self._delete("quiz_sessions", f"user = {quote(uid)}")
        self.pb.batch([BatchRequest.delete("users", uid),
                       audit_request(tenant, "", "cli", FORGET_TOOL, pseudonym, "gebruiker vergeten", "",
                                     "verwijderd en geanonimiseerd")])
        out.deleted["users"] = 1
        return out
