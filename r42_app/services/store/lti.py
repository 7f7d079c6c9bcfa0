"""LTI 1.3, the stored part (issue 48, part 2): the learning environments registered to each tenant (collection
`lti_platforms`, superuser only), and the people who come in from them (users.lti_id: "<platform issuer>|<sub>",
matched on every launch, created the first time). One code path for `r42 lti add|list|remove` and, next, the
admin page and dynamic registration."""

from __future__ import annotations

import builtins
import logging
import secrets
from datetime import UTC, datetime
from typing import Any

from r42_app.core.identity import Tenant
from r42_app.core.lti import Launch, LtiError, Registration, registration
from r42_app.core.messages import language_of
from r42_app.services.store.audit import audit_request
from r42_app.services.store.pb import BatchRequest, PocketBase, pb_time, quote
from r42_app.services.store.people import create_vouched

log = logging.getLogger(__name__)

COLLECTION = "lti_platforms"
TOOL = "lti"  # audit_log.tool of a registration added or removed
MAX_LTI_ID = 1300


def _registration_of(row: dict[str, Any], loopback_ok: bool) -> Registration | None:
    """A stored row as a registration; None for a row that cannot be used (as if it were not there)."""
    try:
        ids = row.get("deployment_ids")
        return registration(str(row.get("tenant", "")), row.get("issuer"), row.get("client_id"),
                            ids if isinstance(ids, list) else [], row.get("jwks_url"), row.get("auth_url"),
                            row.get("token_url") or "", row.get("instructor_role") or "learner", loopback_ok)
    except LtiError:
        return None


def lti_id(issuer: str, subject: str) -> str:
    return f"{issuer}|{subject}"[:MAX_LTI_ID]


class LtiStore:
    def __init__(self, pb: PocketBase, loopback_ok: bool = False):
        self.pb = pb
        self.loopback_ok = loopback_ok  # http platforms on loopback: only while the app itself runs there

    def list(self, tenant: Tenant) -> list[Registration]:
        rows = self.pb.all(COLLECTION, filter=f"tenant = {quote(tenant.id)}", sort="created")
        return [reg for reg in (_registration_of(r, self.loopback_ok) for r in rows) if reg is not None]

    def find(self, issuer: str, client_id: str = "") -> Registration | None:
        """The registration a launch or a login initiation names (by issuer, and client id when the platform sends
        one; an issuer registered with several client ids needs it)."""
        flt = f"issuer = {quote(issuer)}" + (f" && client_id = {quote(client_id)}" if client_id else "")
        rows = self.pb.all(COLLECTION, filter=flt)
        found = [reg for reg in (_registration_of(r, self.loopback_ok) for r in rows) if reg is not None]
        return found[0] if len(found) == 1 else None

    def add(self, tenant: Tenant, actor_id: str, actor: str, issuer: str, client_id: str,
            deployment_ids: builtins.list[str], jwks_url: str, auth_url: str, token_url: str = "",
            instructor_role: str = "admin") -> Registration:
        """Register a platform (or add deployment ids to one registered already to this tenant)."""
        reg = registration(tenant.id, issuer, client_id, deployment_ids, jwks_url, auth_url, token_url,
                           instructor_role, self.loopback_ok)
        existing = self.pb.first(COLLECTION, f"issuer = {quote(reg.issuer)} && client_id = {quote(reg.client_id)}")
        if existing is not None and existing.get("tenant") != tenant.id:
            raise LtiError("lti.registered_elsewhere", f"{reg.issuer} {reg.client_id} belongs to another tenant")
        if existing is not None:
            stored = existing.get("deployment_ids")
            kept: builtins.list[str] = [str(d) for d in stored] if isinstance(stored, builtins.list) else []
            reg = registration(tenant.id, reg.issuer, reg.client_id, [*kept, *reg.deployment_ids], reg.jwks_url,
                               reg.auth_url, reg.token_url, reg.instructor_role, self.loopback_ok)
        body = {"tenant": tenant.id, "issuer": reg.issuer, "client_id": reg.client_id,
                "deployment_ids": list(reg.deployment_ids), "jwks_url": reg.jwks_url, "auth_url": reg.auth_url,
                "token_url": reg.token_url, "instructor_role": reg.instructor_role}
        write = (BatchRequest.update(COLLECTION, existing["id"], body) if existing is not None
                 else BatchRequest.create(COLLECTION, body))
        self.pb.batch([write, audit_request(tenant, actor_id, actor, TOOL, reg.issuer, "platform",
                                            "" if existing is None else "registered",
                                            f"{reg.client_id} {list(reg.deployment_ids)}")])
        log.info("lti: %s (%s) registered to tenant %s by %s", reg.issuer, reg.client_id, tenant.slug, actor)
        return reg

    def remove(self, tenant: Tenant, actor_id: str, actor: str, issuer: str, client_id: str) -> bool:
        row = self.pb.first(COLLECTION, f"tenant = {quote(tenant.id)} && issuer = {quote(issuer)} && "
                                        f"client_id = {quote(client_id)}")
        if row is None:
            return False
        self.pb.batch([BatchRequest.delete(COLLECTION, row["id"]),
                       audit_request(tenant, actor_id, actor, TOOL, issuer, "platform", client_id, "removed")])
        return True

    def person(self, reg: Registration, tenant: Tenant, launch: Launch) -> str:
        """The user id of the launch's person in the registration's tenant: by (platform, sub); else by e-mail
        within the tenant (then linked); else created as the launch's role. Deactivated people are refused; a
        person of another tenant with the same e-mail is not taken over (a new account is not made either). The
        launch's locale becomes the person's language when R42 speaks it and they chose none in R42."""
        key = lti_id(reg.issuer, launch.subject)
        row = self.pb.first("users", f"lti_id = {quote(key)}")
        if row is None and launch.email:
            row = self.pb.first("users", f"email = {quote(launch.email)}")
            if row is not None and row.get("lti_id") and row.get("lti_id") != key:
                raise LtiError("lti.subject_mismatch", f"{launch.email} is linked to another LMS account")
        if row is not None and row.get("tenant") != reg.tenant_id:
            raise LtiError("lti.other_tenant", f"{launch.email or key} is a person of another tenant")
        if row is not None and row.get("state") == "deactivated":
            raise LtiError("lti.deactivated", f"user {row.get('id')} is deactivated")
        now = pb_time(datetime.now(UTC))
        speaks = language_of(launch.locale) or ""  # the LMS's language for the person, if R42 speaks it (issue 52)
        if row is None:
            # an LMS need not share the e-mail address: such a person gets one that cannot receive mail
            email = launch.email or f"lti-{secrets.token_hex(8)}@lti.invalid"
            made = create_vouched(self.pb, tenant, {
                "email": email, "name": launch.name or email.split("@")[0], "role": launch.role,
                "verified": bool(launch.email), "lti_id": key, "signs_in_with": "lti", "last_sign_in": now,
                "language": speaks},
                "lti", f"lti_id = {quote(key)}")
            if made is None:
                raise LtiError("lti.failed", f"could not create {email}")
            return made
        body = {"lti_id": key, "signs_in_with": "lti", "last_sign_in": now}
        if row.get("state") == "invited":
            body["state"] = "active"
        if speaks and not row.get("language"):  # a language the person chose in R42 stays theirs
            body["language"] = speaks
        self.pb.update("users", str(row["id"]), body)
        return str(row["id"])
