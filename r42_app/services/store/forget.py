"""`r42 user forget` (issue 28): everything of one user deleted or anonymised, in a fixed order, each step one that
can run again (a forget interrupted half-way is finished by running it again).

- deleted: the user's questions in the question log, their ratings of answers (question and answer text),
  their access row, their quiz sessions, and finally the account itself;
- kept without the user: AI cost events and their daily totals (the tenant's costs and credits stay whole),
  suggestions (the proposal stays in the queue or its history, "anoniem"), and the reviews they made;
- kept with a pseudonym: audit rows (their actor and target name the pseudonym, not the user).

The pseudonym is "verwijderd-" plus the first 8 characters of the user's question-log key: the same in every row,
unrelated to the user id, and not something anyone can turn back into the user. The forget itself is audited.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from r42_app.core.identity import Tenant
from r42_app.services.store.audit import audit_request
from r42_app.services.store.pb import BatchRequest, PocketBase, quote
from r42_app.services.store.questions import QuestionLog

BATCH = 200
FORGET_TOOL = "r42:user.forget"


class ForgetError(Exception):
    pass


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

    def _audit_rows(self, tenant: Tenant, user: dict, pseudonym: str) -> int:
        """The user's audit rows lose the user, and their names in actor and target become the pseudonym."""
        names = {str(user.get(k) or "") for k in ("email", "name")} - {""}
        done = 0
        flt = f"tenant = {quote(tenant.id)} && (user = {quote(user['id'])}" + "".join(
            f" || arguments ~ {quote(n)}" for n in names) + ")"
        for row in self.pb.all("audit_log", filter=flt):
            stored = row.get("arguments")
            args: dict = stored if isinstance(stored, dict) else {}
            changed = {k: pseudonym if isinstance(v, str) and v in names else v for k, v in args.items()}
            body: dict = {"arguments": changed}
            if row.get("user") == user["id"]:
                body["user"] = None
            if changed != args or "user" in body:
                self.pb.update("audit_log", row["id"], body)
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
        out.anonymised["audit_log"] = self._audit_rows(tenant, user, pseudonym)
        out.deleted["chatbot_access"] = self._delete("chatbot_access", f"user = {quote(uid)}")
        out.deleted["quiz_sessions"] = self._delete("quiz_sessions", f"user = {quote(uid)}")
        self.pb.batch([BatchRequest.delete("users", uid),
                       audit_request(tenant, "", "cli", FORGET_TOOL, pseudonym, "gebruiker vergeten", "",
                                     "verwijderd en geanonimiseerd")])
        out.deleted["users"] = 1
        return out
