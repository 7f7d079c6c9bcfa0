"""Single sign-on, the stored part: each tenant's identity provider (collection `tenant_sso`, superuser only, the
client secret a hidden field that nobody reads back), and the people who sign in through it (users.sso_issuer and
users.sso_subject: matched by the provider's subject, not only by e-mail; created just in time).

One code path for the admin page, the CLI (`r42 sso set|show|off`) and the sign-in route (api.py `/auth/oidc/...`).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from r42_app.core.identity import Tenant
from r42_app.core.sso import (
    Person,
    SsoConfig,
    SsoError,
    domain_of,
    issuer_problem,
    parse_domains,
    settings_problem,
)
from r42_app.services.store.audit import audit_request
from r42_app.services.store.pb import BatchRequest, PBError, PocketBase, pb_time, quote
from r42_app.services.store.people import create_vouched

log = logging.getLogger(__name__)

COLLECTION = "tenant_sso"
TOOL = "sso"  # audit_log.tool of a change to a tenant's sign-in settings, and of a person made by a sign-in


def _config_of(row: dict[str, Any], tenant: dict[str, Any], loopback_ok: bool = True) -> SsoConfig | None:
    """A stored row as settings; None for a row that cannot be used (it is then as if SSO were off)."""
    try:
        domains = parse_domains(row.get("domains") or [])
    except SsoError:
        return None
    issuer, client_id = row.get("issuer"), row.get("client_id")
    if issuer_problem(issuer, loopback_ok) or not isinstance(client_id, str) or not client_id:
        return None
    return SsoConfig(tenant_id=str(tenant.get("id", "")), tenant_slug=str(tenant.get("slug", "")),
                     tenant_name=str(tenant.get("name", "")), issuer=str(issuer).strip(), client_id=client_id,
                     domains=domains, admin_group=str(row.get("admin_group") or ""),
                     passwords=row.get("passwords") is not False)


class SsoStore:
    """Tenants' identity providers and the people who sign in through them (the app's superuser connection)."""

    def __init__(self, pb: PocketBase, loopback_ok: bool = False):
        self.pb = pb
        # an http issuer on this machine's loopback: only while the app itself runs there (development, the tests),
        # so that a tenant's admin cannot point the server at services on its loopback in production
        self.loopback_ok = loopback_ok

    # -- settings ----------------------------------------------------------------------------------------------------

    def _row(self, tenant_id: str) -> dict[str, Any] | None:
        return self.pb.first(COLLECTION, f"tenant = {quote(tenant_id)}", expand="tenant")

    def get(self, tenant: Tenant, enabled_only: bool = False) -> SsoConfig | None:
        """The tenant's settings (None: passwords only); `enabled_only`: None too while the tenant is disabled."""
        row = self._row(tenant.id)
        if row is None:
            return None
        known = (row.get("expand") or {}).get("tenant") or {"id": tenant.id, "slug": tenant.slug, "name": tenant.name}
        if enabled_only and known.get("state") == "disabled":
            return None
        return _config_of(row, known, self.loopback_ok)

    def _owner(self, domain: str) -> tuple[SsoConfig, dict[str, Any]] | None:
        """The settings that name `domain`, and their tenant's row (enabled or not)."""
        if not domain:
            return None
        # domains is a JSON list; the filter finds candidates, the exact check is here
        for row in self.pb.all(COLLECTION, filter=f"domains ~ {quote(domain)}", expand="tenant"):
            tenant = (row.get("expand") or {}).get("tenant") or {}
            config = _config_of(row, tenant, self.loopback_ok)
            if config is not None and domain in config.domains:
                return config, tenant
        return None

    def for_email(self, email: str) -> SsoConfig | None:
        """The settings of the (enabled) tenant whose SSO domains hold `email`'s domain (None: a password sign-in)."""
        found = self._owner(domain_of(email))
        return found[0] if found is not None and found[1].get("state") != "disabled" else None

    def secret(self, tenant_id: str) -> str:
        """The client secret, for the code exchange only (never shown, never logged)."""
        row = self.pb.first(COLLECTION, f"tenant = {quote(tenant_id)}")
        return str((row or {}).get("client_secret") or "")

    def set(self, tenant: Tenant, actor_id: str, actor: str, issuer: str, client_id: str, secret: str | None,
            domains: object, admin_group: str = "", passwords: bool = True) -> SsoConfig:
        """Connect (or change) the tenant's provider. `secret` None keeps the stored one (the admin page shows no
        secret, so a change of domains does not ask for it again). A domain may belong to one tenant only."""
        issuer = issuer.strip() if isinstance(issuer, str) else issuer
        problem = issuer_problem(issuer, self.loopback_ok)
        if problem:
            raise SsoError(problem, f"not a usable issuer URL: {str(issuer)[:100]!r}")
        existing = self._row(tenant.id)
        if secret is None:  # kept only for the same provider and client: never sent to a new issuer
            same = existing is not None and existing.get("issuer") == issuer and \
                existing.get("client_id") == (client_id.strip() if isinstance(client_id, str) else client_id)
            secret = str(existing.get("client_secret") or "") if same and existing else ""
            if not secret:
                raise SsoError("sso.secret_needed" if existing else "sso.secret_invalid",
                               "a client secret is needed the first time and for another issuer or client id")
        problem = settings_problem(client_id, secret, admin_group)
        if problem:
            raise SsoError(problem, problem.replace("sso.", "").replace("_", " "))
        found = parse_domains(domains)
        for domain in found:
            owned = self._owner(domain)  # a disabled tenant keeps its domains: it may be enabled again
            owner = owned[0] if owned is not None else None
            if owner is not None and owner.tenant_id != tenant.id:
                raise SsoError("sso.domain_taken", f"{domain} already signs in through tenant {owner.tenant_slug}",
                               domain=domain)
            self._check_claim(tenant, domain, by_admin=bool(actor_id))
        body = {"tenant": tenant.id, "issuer": issuer, "client_id": client_id.strip(), "client_secret": secret.strip(),
                "domains": list(found), "admin_group": admin_group.strip(), "passwords": bool(passwords)}
        before = f"{existing.get('issuer')} {existing.get('domains')}" if existing else "off"
        audit = audit_request(tenant, actor_id, actor, TOOL, tenant.slug, "sso", before,
                              f"{issuer} {list(found)}")
        write = (BatchRequest.update(COLLECTION, existing["id"], body) if existing
                 else BatchRequest.create(COLLECTION, body))
        self.pb.batch([write, audit])
        config = self.get(tenant)
        assert config is not None
        log.info("sso of tenant %s set by %s: %s for %s", tenant.slug, actor, issuer, ",".join(found))
        return config

    def _check_claim(self, tenant: Tenant, domain: str, by_admin: bool) -> None:
        """A domain is a claim on people: never on people of another tenant, and an admin (not the operator) claims
        only a domain on which the tenant has people already (their own, as a rule), so that no admin can send
        another organisation's addresses, or a public mail domain, to their own provider."""
        others = self.pb.first("users", f"email ~ {quote('%@' + domain)} && tenant != {quote(tenant.id)}",
                               fields="id")
        if others is not None:
            raise SsoError("sso.domain_in_use", f"{domain} has people of another tenant", domain=domain)
        if by_admin and self.pb.first("users", f"email ~ {quote('%@' + domain)} && tenant = {quote(tenant.id)}",
                                      fields="id") is None:
            raise SsoError("sso.domain_unproven", f"tenant {tenant.slug} has nobody on {domain}", domain=domain)

    def off(self, tenant: Tenant, actor_id: str, actor: str) -> bool:
        """Disconnect the provider (people sign in with a password again); False when it was not connected."""
        existing = self._row(tenant.id)
        if existing is None:
            return False
        self.pb.batch([BatchRequest.delete(COLLECTION, existing["id"]),
                       audit_request(tenant, actor_id, actor, TOOL, tenant.slug, "sso", str(existing.get("issuer")),
                                     "off")])
        log.info("sso of tenant %s switched off by %s", tenant.slug, actor)
        return True

    def passwords_allowed(self, email: str) -> bool:
        """Whether `email` may sign in with a password: False for a person of a tenant that switched passwords off
        for this domain (pb_hooks/r42_rules.js refusePasswordOfSsoDomain holds the same for every client). A
        person of another tenant is never locked out by someone else's domain setting."""
        config = self.for_email(email)
        if config is None or config.passwords:
            return True
        row = self.pb.first("users", f"email = {quote(email.strip().lower())}", fields="tenant")
        return row is not None and row.get("tenant") != config.tenant_id

    # -- people ------------------------------------------------------------------------------------------------------

    def person(self, config: SsoConfig, person: Person) -> str:
        """The user id of `person` in the config's tenant: found by (issuer, subject), else by e-mail (then linked
        to the subject), else created just in time as a learner (an admin when in the admin group). The admin group,
        when the tenant has one, decides the role at every sign-in. SsoError when the person may not sign in here:
        deactivated, or the e-mail is a person of another tenant."""
        tenant = Tenant(config.tenant_id, config.tenant_slug, config.tenant_name)
        row = self.pb.first("users", f"sso_issuer = {quote(person.issuer)} && sso_subject = {quote(person.subject)}")
        if row is None:
            row = self.pb.first("users", f"email = {quote(person.email)}")
            if row is not None and row.get("sso_subject") and (row.get("sso_issuer"), row.get("sso_subject")) != (
                    person.issuer, person.subject):
                # the same address, another account at the provider: the first one keeps it
                raise SsoError("sso.subject_mismatch", f"{person.email} is linked to another account of the provider")
        if row is not None and row.get("tenant") != config.tenant_id:
            raise SsoError("sso.other_tenant", f"{person.email} is a person of another tenant")
        if row is not None and row.get("state") == "deactivated":
            raise SsoError("sso.deactivated", f"user {row.get('id')} is deactivated")
        role = "admin" if person.admin else "learner"
        now = pb_time(datetime.now(UTC))
        if row is None:
            same = f"sso_issuer = {quote(person.issuer)} && sso_subject = {quote(person.subject)}"
            made = create_vouched(self.pb, tenant, {
                "email": person.email, "name": person.name or person.email.split("@")[0], "role": role,
                "verified": True, "sso_issuer": person.issuer, "sso_subject": person.subject,
                "signs_in_with": "sso", "last_sign_in": now}, "sso", same)
            if made is None:
                raise SsoError("sso.failed", f"could not create {person.email}")
            user_id = made
            log.info("sso: %s joined tenant %s as %s", user_id, config.tenant_slug, role)
            return user_id
        body: dict[str, Any] = {"sso_issuer": person.issuer, "sso_subject": person.subject,
                                "signs_in_with": "sso", "last_sign_in": now}
        if row.get("state") == "invited":  # the provider vouches for the address: the invitation is accepted
            body["state"] = "active"
            body["verified"] = True
        requests = [BatchRequest.update("users", str(row["id"]), body)]
        if config.admin_group and row.get("role") != role:
            body["role"] = role
            requests.append(audit_request(tenant, "", "sso", "people", person.email, "role",
                                          str(row.get("role")), role))
        try:
            self.pb.batch(requests)
        except PBError as exc:
            if "last_admin" in str(exc.data):  # the group would demote the last admin: they stay one
                body.pop("role", None)
                self.pb.update("users", str(row["id"]), body)
            else:
                raise
        return str(row["id"])
