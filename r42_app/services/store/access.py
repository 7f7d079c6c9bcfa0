"""Who may use which R42 capability: the tenant's master switch and default, each user's
`chatbot_access` row, and an audit row for every change (settings page and CLI alike).

Reads happen on every chat turn (no cache: a change counts on the user's next turn), in one request with the
quiz lock (`turn_guard`), which also checks the turn's session: its token still valid and not signed out, the user
still in that tenant with that role (issue 44; a 401 PBError otherwise, with `data["reason"]`). Writes are
admin or operator actions; callers check who may make them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from r42_app.core.capabilities import (
    CAPABILITIES,
    CAPABILITY_LABELS,
    DEFAULT_CAPABILITIES,
    INHERIT,
    OVERRIDE_LABELS,
    AccessRow,
    Resolution,
    known,
    migrate_legacy_scopes_to_overrides,
    project,
    resolve,
    with_override,
)
from r42_app.core.costs import TenantCredits
from r42_app.core.errors import UserError
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.services.store.audit import audit_request
from r42_app.services.store.batched import Batched
from r42_app.services.store.pb import BatchRequest, PBError, PocketBase, pb_time, quote

log = logging.getLogger(__name__)

MAX_GUARDS = 200  # checks in one turn-guards request (pb_hooks/r42_rules.js MAX_GUARDS)
AUDIT_PREFIX = "chatbot."  # audit_log.tool of capability changes (chatbot.enabled, .default, .access, .migrate)


class AccessError(UserError):
    """A capability change was refused: `user_message` says why to the admin, `str()` to the operator."""


@dataclass(frozen=True)
class TenantChatbot:
    enabled: bool
    default: frozenset[str]
    credits: TenantCredits = TenantCredits(0.0)
    question_log: bool = True  # the tenant's questions go to the question log (issue 28); off: `question_log_off`


@dataclass(frozen=True)
class GuardReading:
    """What a chat turn's guard reads of PocketBase: the tenant's switch, default and credit, the user's effective
    capabilities, and whether a quiz of theirs is open."""

    chatbot: TenantChatbot
    resolution: Resolution
    quiz_active: bool


@dataclass(frozen=True)
class UserAccess:
    """One user of a tenant with their row (if any) and what it resolves to."""

    id: str
    name: str
    email: str
    role: str
    row: AccessRow | None
    resolution: Resolution


@dataclass(frozen=True)
class AuditEntry:
    when: str
    actor: str
    target: str
    what: str
    before: str
    after: str


def _tenant_chatbot(row: Mapping[str, Any]) -> TenantChatbot:
    default = row.get("chatbot_default_capabilities")
    credits = row.get("credits")
    return TenantChatbot(bool(row.get("chatbot_enabled")),
                         DEFAULT_CAPABILITIES if default is None or not isinstance(default, list) else known(default),
                         TenantCredits(float(credits) if isinstance(credits, (int, float)) else 0.0,
                                       bool(row.get("credits_unlimited")), str(row.get("plan") or "")),
                         row.get("question_log_off") is not True)


def _guard_body(check: tuple[str, ...]) -> dict[str, str]:
    """One check of the turn guard as pb_hooks reads it: tenant, user, now, and the session's role and token."""
    tenant, user, now, *session = check
    body = {"tenant": tenant, "user": user, "now": now}
    for key, value in zip(("role", "token"), session, strict=False):
        if value:
            body[key] = value
    return body


def _set(caps: Iterable[str]) -> str:
    """A set of capabilities in the audit list's words ("Vragen beantwoorden, Zoeken in de kennisbank")."""
    return ", ".join(CAPABILITY_LABELS[c] for c in CAPABILITIES if c in set(caps)) or "niets"


class AccessStore:
    """Reads and writes tenants' chatbot settings and `chatbot_access` rows with a superuser connection."""

    def __init__(self, pb: PocketBase, overrides_enabled: bool = True,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self.pb = pb
        self.overrides_enabled = overrides_enabled
        self.clock = clock  # "now" for a quiz's expiry (QuizStore's clock)
        # the guards of turns that arrive together: one request (pb_hooks `/api/r42/turn-guards`) per batch
        # (tenant, user, now) or (tenant, user, now, role, token): see turn_guard
        self.guards: Batched[tuple[str, ...], GuardReading] = Batched(self.turn_guards, max_batch=MAX_GUARDS)

    async def read_guards(self, user: SignedInUser, token: str = "") -> GuardReading:
        """A chat turn's guard (chat/turn.py TurnGuards): `turn_guard` for this user and session, in one request
        shared with the turns that arrive together, off the event loop."""
        return await self.guards.call((user.tenant_id, user.id, pb_time(self.clock()), user.role, token))

    # -- reads (every turn) -----------------------------------------------------------------------

    def tenant_chatbot(self, tenant_id: str) -> TenantChatbot:
        return _tenant_chatbot(self.pb.get("tenants", tenant_id))

    def access_row(self, tenant_id: str, user_id: str) -> AccessRow | None:
        row = self.pb.first("chatbot_access", f"tenant = {quote(tenant_id)} && user = {quote(user_id)}")
        return AccessRow.from_record(row)

    def turn_guard(self, tenant_id: str, user_id: str, now: str, role: str = "",
                   token: str = "") -> GuardReading:
        """What a chat turn's guard reads, in one request (pb_hooks `/api/r42/turn-guard`): the tenant's switch,
        default and credit, this user's effective capabilities, and whether a quiz of theirs is open at `now`
        (a PocketBase time). As fresh as `effective` and QuizStore.active: nothing is cached. PocketBase also checks
        the session: the user must still be in `tenant_id` (and have `role`, when given), and `token`, when given, must
        be this user's, valid and not signed out; else a PBError 401 whose `data["reason"]` is "changed" or
        "signed_out"."""
        found = self.pb.send("POST", "/api/r42/turn-guard", body=_guard_body((tenant_id, user_id, now, role, token)))
        result = self._guard_result(found, user_id)
        if isinstance(result, PBError):
            raise PBError(502, "turn-guard answered without the tenant")
        return result

    def _guard_result(self, found: Any, user_id: str) -> GuardReading | PBError:
        """One guard answer of pb_hooks (the tenant row, the access row, quiz_active), or its error."""
        tenant = found.get("tenant") if isinstance(found, dict) else None
        if not isinstance(tenant, dict):
            error = found.get("error") if isinstance(found, dict) else None
            reason = found.get("reason") if isinstance(found, dict) else None
            return PBError(error if isinstance(error, int) else 502,
                           str(found.get("message") if isinstance(found, dict) else "")
                           or "turn-guards answered without the tenant",
                           {"reason": reason} if isinstance(reason, str) else None)
        access = found.get("access")
        chatbot = _tenant_chatbot(tenant)
        row = AccessRow.from_record(access if isinstance(access, dict) else None)
        return GuardReading(chatbot, self.resolve(chatbot, row, user_id), found.get("quiz_active") is True)

    def turn_guards(self, checks: list[tuple[str, ...]]) -> list[GuardReading | PBError]:
        """`turn_guard` for several turns ((tenant, user, now) or (tenant, user, now, role, token)) in one request, each
        read made now: a result or a PBError per check, in order (`guards.call` batches the turns that arrive
        together)."""
        found = self.pb.send("POST", "/api/r42/turn-guards", body={"checks": [_guard_body(c) for c in checks]})
        results = found.get("results") if isinstance(found, dict) else None
        if not isinstance(results, list) or len(results) != len(checks):
            raise PBError(502, "turn-guards answered without one result per check")
        return [self._guard_result(one, check[1]) for check, one in zip(checks, results, strict=True)]

    def resolve(self, chatbot: TenantChatbot, row: AccessRow | None, user_id: str = "") -> Resolution:
        result = resolve(chatbot.default, row, self.overrides_enabled)
        if result.unknown:
            log.warning("unknown capability ids %s in the access row of user %s (ignored)", list(result.unknown),
                        user_id)
        return result

    def effective(self, tenant_id: str, user_id: str) -> tuple[TenantChatbot, Resolution]:
        """The tenant's switch and default, and this user's effective capabilities (two queries)."""
        chatbot = self.tenant_chatbot(tenant_id)
        return chatbot, self.resolve(chatbot, self.access_row(tenant_id, user_id), user_id)

    def users(self, tenant: Tenant) -> list[UserAccess]:
        """Every user of the tenant with their access (three queries, whatever the number of users)."""
        chatbot = self.tenant_chatbot(tenant.id)
        rows = {r["user"]: AccessRow.from_record(r)
                for r in self.pb.all("chatbot_access", filter=f"tenant = {quote(tenant.id)}")}
        out = []
        for u in self.pb.all("users", filter=f"tenant = {quote(tenant.id)}", sort="name,email",
                             fields="id,name,email,role"):
            row = rows.get(u["id"])
            out.append(UserAccess(u["id"], u.get("name") or u.get("email", ""), u.get("email", ""),
                                  u.get("role", "learner"), row, self.resolve(chatbot, row, u["id"])))
        return out

    def user_by_email(self, tenant: Tenant, email: str) -> dict[str, Any] | None:
        return self.pb.first("users", f"tenant = {quote(tenant.id)} && email = {quote(email.strip())}")

    def recent_changes(self, tenant: Tenant, limit: int = 20) -> list[AuditEntry]:
        rows = self.pb.list("audit_log", filter=f"tenant = {quote(tenant.id)} && tool ~ {quote(AUDIT_PREFIX + '%')}",
                            sort="-created,-id", per_page=limit).get("items", [])
        out = []
        for r in rows:
            args = r.get("arguments") if isinstance(r.get("arguments"), dict) else {}
            out.append(AuditEntry(str(r.get("created", ""))[:16], str(args.get("actor", "")),
                                  str(args.get("target", "")), str(args.get("what", "")),
                                  str(args.get("before", "")), str(args.get("after", ""))))
        return out

    # -- writes (settings page, CLI) ---------------------------------------------------------------

    def _audit(self, tenant: Tenant, actor_id: str, actor: str, kind: str, target: str, what: str, before: str,
               after: str) -> BatchRequest:
        return audit_request(tenant, actor_id, actor, AUDIT_PREFIX + kind, target, what, before, after)

    def _batch(self, requests: list[BatchRequest]) -> None:
        try:
            self.pb.batch(requests)
        except PBError as exc:
            raise AccessError("access.save_failed", f"PocketBase refused the change: {exc}") from exc

    def set_enabled(self, tenant: Tenant, enabled: bool, actor_id: str, actor: str) -> bool:
        """The master switch; False when it already was as asked (nothing written)."""
        before = self.tenant_chatbot(tenant.id)
        if before.enabled == enabled:
            return False
        self._batch([BatchRequest.update("tenants", tenant.id, {"chatbot_enabled": enabled}),
                     self._audit(tenant, actor_id, actor, "enabled", "", "R42 aan/uit",
                                 "aan" if before.enabled else "uit", "aan" if enabled else "uit")])
        return True

    def set_question_log(self, tenant: Tenant, on: bool, actor_id: str, actor: str) -> bool:
        """The tenant's question-log switch (issue 28); False when it already was as asked (nothing written).
        Off stops new rows at the next question; the rows already there stay until their retention ends."""
        before = self.tenant_chatbot(tenant.id)
        if before.question_log == on:
            return False
        self._batch([BatchRequest.update("tenants", tenant.id, {"question_log_off": not on}),
                     self._audit(tenant, actor_id, actor, "question_log", "", "vragenlog aan/uit",
                                 "aan" if before.question_log else "uit", "aan" if on else "uit")])
        return True

    def set_default(self, tenant: Tenant, capabilities: Iterable[str], actor_id: str, actor: str) -> bool:
        wanted = list(capabilities)
        bad = [c for c in wanted if c not in CAPABILITIES]
        if bad:
            raise AccessError("access.unknown_capability", f"Unknown capability {', '.join(bad)}; valid ids: "
                              f"{', '.join(CAPABILITIES)}.", bad=", ".join(bad), valid=", ".join(CAPABILITIES))
        before = self.tenant_chatbot(tenant.id)
        after = known(wanted)
        if after == before.default:
            return False
        self._batch([BatchRequest.update("tenants", tenant.id,
                                         {"chatbot_default_capabilities": [c for c in CAPABILITIES if c in after]}),
                     self._audit(tenant, actor_id, actor, "default", "", "standaard voor de organisatie",
                                 _set(before.default), _set(after))])
        return True

    def save_rows(self, tenant: Tenant, changes: Mapping[str, tuple[str, AccessRow]], actor_id: str, actor: str,
                  kind: str = "access") -> int:
        """Write new rows for users ({user_id: (the `updated` the caller saw, "" for no row; new row)}) in
        one batch, each projected onto `capability_scopes`, with an audit row each. Refused (nothing
        written) when a row changed since the caller read it."""
        if not changes:
            return 0
        chatbot = self.tenant_chatbot(tenant.id)
        current = {r["user"]: r for r in self.pb.all("chatbot_access", filter=f"tenant = {quote(tenant.id)}")}
        members = {u["id"]: u for u in self.pb.all("users", filter=f"tenant = {quote(tenant.id)}",
                                                      fields="id,email")}
        requests: list[BatchRequest] = []
        for user_id, (seen, row) in changes.items():
            if user_id not in members:
                raise AccessError("access.not_member", f"user {user_id} is not in tenant {tenant.slug}")
            stored = current.get(user_id)
            if (stored.get("updated", "") if stored else "") != seen:
                email = members[user_id]["email"]
                raise AccessError("access.changed_meanwhile", f"the access of {email} changed meanwhile; read it "
                                  "again and retry", email=email)
            old = AccessRow.from_record(stored)
            new = project(row, chatbot.default) if row.overrides else row
            before, after = resolve(chatbot.default, old).effective, resolve(chatbot.default, new).effective
            body = new.to_record()
            requests.append(BatchRequest.update("chatbot_access", stored["id"], body) if stored else
                            BatchRequest.create("chatbot_access", {"tenant": tenant.id, "user": user_id, **body}))
            requests.append(self._audit(tenant, actor_id, actor, kind, members[user_id]["email"],
                                        _describe(old, new), _set(before), _set(after)))
        self._batch(requests)
        return len(changes)

    def set_override(self, tenant: Tenant, user_id: str, capability: str, value: str, actor_id: str,
                     actor: str) -> AccessRow:
        """One override for one user (CLI): read, change, save with the same conflict check."""
        if capability not in CAPABILITIES:
            raise AccessError("access.unknown_capability", f"Unknown capability {capability!r}; valid ids: "
                              f"{', '.join(CAPABILITIES)}.", bad=capability, valid=", ".join(CAPABILITIES))
        chatbot = self.tenant_chatbot(tenant.id)
        stored = self.pb.first("chatbot_access", f"tenant = {quote(tenant.id)} && user = {quote(user_id)}")
        new = with_override(AccessRow.from_record(stored), chatbot.default, capability, value)
        self.save_rows(tenant, {user_id: (stored.get("updated", "") if stored else "", new)}, actor_id, actor)
        return new

    def migrate_legacy(self, tenant: Tenant, user_ids: Iterable[str] | None, actor_id: str, actor: str,
                       dry_run: bool = False) -> list[tuple[UserAccess, frozenset[str]]]:
        """Turn legacy exact lists into overrides with the same effective set (all users, or these).
        Returns each migrated user with the effective set after."""
        chatbot = self.tenant_chatbot(tenant.id)
        wanted = set(user_ids) if user_ids is not None else None
        todo = [(u, u.row) for u in self.users(tenant) if u.row is not None and u.row.is_legacy
                and (wanted is None or u.id in wanted)]
        changes: dict[str, tuple[str, AccessRow]] = {}
        out: list[tuple[UserAccess, frozenset[str]]] = []
        for u, row in todo:
            new = migrate_legacy_scopes_to_overrides(row, chatbot.default)
            assert new is not None  # a row in, a row out
            changes[u.id] = (row.updated, new)
            out.append((u, resolve(chatbot.default, new, self.overrides_enabled).effective))
        if not dry_run:
            self.save_rows(tenant, changes, actor_id, actor, kind="migrate")
        return out


def _describe(old: AccessRow | None, new: AccessRow) -> str:
    """What changed between two rows, in words for the audit list."""
    if old is not None and old.is_legacy and not new.is_legacy:
        return "vaste lijst omgezet naar Standaard/Toestaan/Weigeren"
    before = dict(old.overrides) if old else {}
    parts = [f"{CAPABILITY_LABELS.get(c, c)}: {OVERRIDE_LABELS.get(before.get(c, INHERIT), before.get(c, INHERIT))}"
             f" → {OVERRIDE_LABELS.get(v, v)}" for c, v in new.overrides.items() if before.get(c, INHERIT) != v]
    return "; ".join(parts) or "geen wijziging"
