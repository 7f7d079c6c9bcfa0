"""`r42 user forget` (issues 28 and 44): everything of one user deleted or pseudonymised, in a fixed order, each step
one that can run again (a forget interrupted half-way is finished by running it again).

- deleted: the user's questions in the question log, their ratings of answers (question and answer text), their
  access row, their quiz sessions, the messages they left through the MCP demo server, and finally the account;
- kept without the user: AI cost events and their daily totals (the tenant's costs and credits stay whole),
  suggestions (the proposal stays in the queue or its history, "anoniem"), and the reviews they made;
- kept with what they wrote taken out: the audit rows of their own external tool calls keep the tool, the time, how
  it went and how long it took, but every text of the arguments and the tool's answer becomes "verwijderd" (a message
  they sent may hold their phone number, which no search for a name finds);
- kept with a pseudonym: wherever their id, e-mail address or name occurs in any other row of the tenant (any text
  or JSON field of any collection but the accounts, the tenants, the app's secrets and the knowledge base: audit
  rows and their `confirmed_by`, a suggestion's reason, delta and review note, the copies of cost events in the
  outbox, the admins' decisions on knowledge gaps, another learner's question that names them, ...) and in the other
  lines of the MCP demo server's messages file. The name is matched as a whole word, so "Jan" leaves "januari".
- left as it is, and said so: the knowledge base (topics, relations, documents: the organisation's own content; a
  topic that names the user is listed for the admins to edit) and backups made before (`r42 backup` zips: a copy of
  a moment, kept until the operator's retention deletes it).

Then PocketBase deletes the rows of its request log that name the user (their URLs held filters with the address)
and rebuilds its databases (VACUUM, the write-ahead log emptied), so that no deleted or rewritten text lingers in free
pages, the WAL, or a backup made afterwards. The search for mentions is a request body (`/api/r42/mentions`), never a
URL, so the forget itself leaves nothing in that log.

The pseudonym is "verwijderd-" plus the first 8 characters of the user's question-log key: the same in every row,
unrelated to the user id, and not something anyone can turn back into the user. The forget itself is audited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from r42_app.core.forget import ERASED, Needles, erased, replaced
from r42_app.core.identity import Tenant
from r42_app.services.store.audit import TOOL_CALL_PREFIX, audit_request
from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PocketBase, quote
from r42_app.services.store.questions import QuestionLog

BATCH = BULK_BATCH
FORGET_TOOL = "r42:user.forget"
# never rewritten: other people's accounts, the organisations, the app's secrets; the knowledge base is only searched
UNTOUCHED = frozenset({"users", "tenants", "app_secrets"})
KNOWLEDGE_BASE = frozenset({"topics", "relations", "documents"})
TEXT_TYPES = frozenset({"text", "editor", "json", "email", "url"})

PSEUDONYM_PREFIX = "verwijderd-"  # a forgotten person's name in the rows that keep them (stored: never translated)
PSEUDONYM_KEY = 8  # ... followed by this many hex characters of their question-log key


def pseudonym_key(name: str) -> str:
    """The key part of a forgotten person's pseudonym ("3fa2b1c9" of "verwijderd-3fa2b1c9"); "" for any other name."""
    key = name.removeprefix(PSEUDONYM_PREFIX)
    return key if key != name and len(key) == PSEUDONYM_KEY and all(c in "0123456789abcdef" for c in key) else ""


class ForgetError(Exception):
    pass


@dataclass
class Forgotten:
    """What `forget` did, per collection (and file): rows deleted, rows pseudonymised, and what it left."""

    pseudonym: str
    deleted: dict[str, int] = field(default_factory=dict)
    anonymised: dict[str, int] = field(default_factory=dict)
    left: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"pseudonym": self.pseudonym, "deleted": self.deleted, "anonymised": self.anonymised,
                "left": self.left}


# A file that can hold what a user wrote, and how to forget them in it: (path, needles, pseudonym) -> (entries
# deleted, entries rewritten). services/adapters/mcp.py forget_in_demo_messages is one.
FileForgetter = Callable[[Path, Needles, str], tuple[int, int]]


class UserForgetter:
    def __init__(self, pb: PocketBase, questions: QuestionLog, files: Sequence[tuple[Path, FileForgetter]] = (),
                 backups_dir: Path | None = None, compact: bool = True):
        self.pb = pb
        self.questions = questions
        self.files = tuple(files)
        self.backups_dir = backups_dir
        self.compact = compact

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

    def _mentions(self, tenant: Tenant, needles: list[str], targets: list[dict]) -> dict[str, list[str]]:
        """The ids of the rows, per collection, that contain any of the needles in any of the target fields. Asked in
        a request body: a URL with the address would stay in PocketBase's request log."""
        if not targets or not needles:
            return {}
        found = self.pb.send("POST", "/api/r42/mentions",
                             body={"tenant": tenant.id, "needles": needles, "targets": targets})
        return {k: [str(i) for i in v] for k, v in (found.get("found") or {}).items() if isinstance(v, list)}

    def _find_user(self, tenant: Tenant, email: str) -> dict:
        wanted = email.strip().lower()
        if len(wanted) >= 3:
            hits = self._mentions(tenant, [wanted], [{"collection": "users", "fields": ["email"], "tenant": True}])
            for uid in hits.get("users", []):
                row = self.pb.get("users", uid)
                if str(row.get("email", "")).strip().lower() == wanted:
                    return row
        raise ForgetError(f"no user {email} in tenant {tenant.slug}")

    def _targets(self) -> tuple[list[dict], list[dict]]:
        """Every collection that can hold text, with its text and JSON fields: (to rewrite, the knowledge base)."""
        collections = self.pb.send("GET", "/api/collections", params={"perPage": 500}).get("items", [])
        rewrite: list[dict] = []
        kb: list[dict] = []
        for c in collections:
            name = str(c.get("name", ""))
            if c.get("system") or name.startswith("_") or name in UNTOUCHED or c.get("type") == "view":
                continue
            fields = c.get("fields") or []
            texts = [str(f["name"]) for f in fields if f.get("type") in TEXT_TYPES and f.get("name") != "id"]
            if texts:
                target = {"collection": name, "fields": texts,
                          "tenant": any(f.get("name") == "tenant" and f.get("type") == "relation" for f in fields)}
                (kb if name in KNOWLEDGE_BASE else rewrite).append(target)
        return rewrite, kb

    def _erase_tool_calls(self, tenant: Tenant, uid: str, pseudonym: str) -> int:
        """The user's own external tool calls: what they wrote (the arguments) and the tool's answer become ERASED,
        who confirmed becomes the pseudonym, and the row no longer names its user."""
        done = 0
        flt = f"tenant = {quote(tenant.id)} && user = {quote(uid)} && tool ~ {quote(TOOL_CALL_PREFIX + '%')}"
        for row in self.pb.all("audit_log", filter=flt):
            self.pb.update("audit_log", row["id"], {
                "user": None, "arguments": erased(row.get("arguments")),
                "outcome": ERASED if row.get("outcome") else "",
                "confirmed_by": pseudonym if row.get("confirmed_by") else ""})
            done += 1
        return done

    def _rewrite(self, collection: str, ids: list[str], fields: list[str], needles: Needles, pseudonym: str) -> int:
        """The rows `ids` with every mention of the user in `fields` replaced by the pseudonym (a `user` relation
        that is theirs emptied too)."""
        pattern = needles.pattern()
        done = 0
        for rid in ids:
            row = self.pb.get(collection, rid)
            body: dict[str, Any] = {}
            for fld in fields:
                stored = row.get(fld)
                if isinstance(stored, (dict, list, str)):
                    changed = replaced(stored, pattern, pseudonym)
                    if changed != stored:
                        body[fld] = changed
            if row.get("user") == needles.user_id and "user" not in fields:
                body["user"] = None
            if body:
                self.pb.update(collection, rid, body)
                done += 1
        return done

    def forget(self, tenant: Tenant, email: str) -> Forgotten:
        user = self._find_user(tenant, email)
        uid = user["id"]
        needles = Needles(uid, str(user.get("email") or "").strip(), " ".join(str(user.get("name") or "").split()))
        pseudonym = PSEUDONYM_PREFIX + self.questions.user_key(tenant.id, uid)[:PSEUDONYM_KEY]
        out = Forgotten(pseudonym)
        out.deleted["question_log"] = self.questions.forget(tenant.id, uid)
        out.deleted["chat_feedback"] = self._delete("chat_feedback", f"user = {quote(uid)}")
        out.anonymised["suggestions"] = self._clear("suggestions", "user", uid)
        out.anonymised["suggestions_reviewed"] = self._clear("suggestions", "reviewed_by", uid)
        out.anonymised["ai_cost_events"] = self._clear("ai_cost_events", "user", uid)
        out.anonymised["ai_cost_daily"] = self._clear("ai_cost_daily", "user", uid)
        out.anonymised["audit_log_tool_calls"] = self._erase_tool_calls(tenant, uid, pseudonym)
        out.anonymised["audit_log"] = self._clear("audit_log", "user", uid)
        rewrite, kb = self._targets()
        fields = {t["collection"]: t["fields"] for t in rewrite}
        for collection, ids in self._mentions(tenant, needles.searched(), rewrite).items():
            done = self._rewrite(collection, ids, fields[collection], needles, pseudonym)
            if done:
                out.anonymised[collection] = out.anonymised.get(collection, 0) + done
        named = self._mentions(tenant, needles.searched(), kb)
        if named.get("topics"):
            out.left["topics"] = sorted(str(self.pb.get("topics", i).get("slug", i)) for i in named["topics"])
        for path, forget_in in self.files:
            gone, changed = forget_in(path, needles, pseudonym)
            if gone:
                out.deleted[path.name] = out.deleted.get(path.name, 0) + gone
            if changed:
                out.anonymised[path.name] = out.anonymised.get(path.name, 0) + changed
        out.deleted["chatbot_access"] = self._delete("chatbot_access", f"user = {quote(uid)}")
        out.deleted["quiz_sessions"] = self._delete("quiz_sessions", f"user = {quote(uid)}")
        self.pb.batch([BatchRequest.delete("users", uid),
                       audit_request(tenant, "", "cli", FORGET_TOOL, pseudonym, "gebruiker vergeten", "",
                                     "verwijderd en geanonimiseerd")])
        out.deleted["users"] = 1
        if self.backups_dir is not None and self.backups_dir.is_dir():  # made before: they still hold the user
            older = sorted(p.name for p in self.backups_dir.iterdir() if p.is_file())
            if older:
                out.left["backups"] = older
        if self.compact:  # the request log's rows that name them, and no deleted text in free pages or the WAL
            gone = self.pb.send("POST", "/api/r42/compact", body={"needles": needles.searched()}, timeout=600)
            out.deleted["request_log"] = int(gone.get("logs_deleted") or 0)
        return out
