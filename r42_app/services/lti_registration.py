"""IMS LTI Dynamic Registration (issue 48, part 2): an admin pastes one R42 URL into Moodle or Brightspace, and the
LMS and R42 register each other without anyone copying client ids and key URLs by hand.

1. `invitation` (the admin on /admin/people, or `r42 lti registration-url`): a one-time URL,
   `/lti/register?r42_invite=…`, valid INVITE_S. Only its SHA-256 is stored (app_secrets, so every worker and the CLI
   see it, and a backup holds it); it names the tenant the LMS will belong to.
2. `register` (`/lti/register`, opened by the LMS with `openid_configuration` and `registration_token` added): the
   invitation is used up first (deleting its row: two tabs cannot both use it; a failure below gives it back), the
   LMS's openid-configuration is fetched (its issuer must be the origin it came from), R42's tool configuration is
   posted to its registration endpoint with the LMS's token, and the client id and deployment it hands out are
   stored as a registration of the tenant (store/lti.py, audited), with Instructor -> admin.

Spec: https://www.imsglobal.org/spec/lti-dr/v1p0. Every refusal is an LtiError with a catalogue code.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from r42_app.core.identity import Tenant
from r42_app.core.lti import LtiError, Registration, origin_of, url_problem
from r42_app.services.adapters.oidc import OidcClient, OidcError
from r42_app.services.store.app_secrets import COLLECTION as SECRETS
from r42_app.services.store.lti import LtiStore
from r42_app.services.store.pb import PBError, PocketBase, quote

log = logging.getLogger(__name__)

INVITE_S = 7 * 24 * 3600.0
INVITE_PARAM = "r42_invite"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"


@dataclass(frozen=True)
class Invitation:
    url: str
    expires: float  # epoch seconds


def _name(token: str) -> str:
    return "lti_invite_" + hashlib.sha256(token.encode()).hexdigest()[:48]


class LtiRegistrations:
    def __init__(self, pb: PocketBase, store: LtiStore, oidc: OidcClient, link_base: str):
        self.pb, self.store, self.oidc = pb, store, oidc
        self.link_base = link_base.rstrip("/")

    def invitation(self, tenant: Tenant, actor_id: str, actor: str, now: float | None = None) -> Invitation:
        """A one-time dynamic-registration URL for this tenant (blocking: PocketBase)."""
        token = secrets.token_urlsafe(32)
        expires = (now or time.time()) + INVITE_S
        self.pb.create(SECRETS, {"name": _name(token), "value": json.dumps(
            {"tenant": tenant.id, "slug": tenant.slug, "expires": int(expires), "actor_id": actor_id,
             "actor": actor})})
        log.info("lti: a registration URL for tenant %s was made by %s", tenant.slug, actor)
        return Invitation(f"{self.link_base}/lti/register?{INVITE_PARAM}={token}", expires)

    def _take(self, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
        row = self.pb.first(SECRETS, f"name = {quote(_name(token))}", fields="id,name,value") if token else None
        try:
            data = json.loads(str((row or {}).get("value") or "{}"))
        except ValueError:
            data = {}
        if row is None or not isinstance(data, dict) or not data.get("tenant"):
            raise LtiError("lti.registration_expired", "unknown or used registration URL")
        try:
            self.pb.delete(SECRETS, str(row["id"]))  # used up now: a second tab finds nothing
        except PBError as exc:
            if exc.status == 404:
                raise LtiError("lti.registration_expired", "the registration URL was used meanwhile") from exc
            raise
        if float(data.get("expires") or 0) < time.time():
            raise LtiError("lti.registration_expired", "the registration URL expired")
        return row, data

    def _give_back(self, row: dict[str, Any]) -> None:
        try:
            self.pb.create(SECRETS, {"name": row["name"], "value": row["value"]})
        except PBError as exc:  # the admin makes a new URL; nothing is lost
            log.warning("a registration URL could not be given back after a failure: %s", exc)

    def tool_configuration(self) -> dict[str, Any]:
        """What R42 tells the LMS about itself (Dynamic Registration 3.6, and the tool configuration claim)."""
        base = self.link_base
        return {
            "application_type": "web", "response_types": ["id_token"],
            "grant_types": ["implicit", "client_credentials"], "initiate_login_uri": f"{base}/lti/login",
            "redirect_uris": [f"{base}/lti/launch"], "client_name": "R42", "jwks_uri": f"{base}/lti/jwks",
            "logo_uri": f"{base}/favicon.svg", "token_endpoint_auth_method": "private_key_jwt", "scope": "",
            TOOL_CONFIG: {
                "domain": urlsplit(base).netloc, "target_link_uri": f"{base}/",
                "description": "R42: de assistent die antwoordt uit de kennisbank van je organisatie.",
                "claims": ["iss", "sub", "name", "given_name", "family_name", "email"],
                "messages": [{"type": "LtiDeepLinkingRequest", "target_link_uri": f"{base}/",
                              "label": "R42 toevoegen"},
                             {"type": "LtiResourceLinkRequest", "target_link_uri": f"{base}/", "label": "R42"}]}}

    def _platform(self, config_url: str) -> dict[str, str]:
        problem = url_problem(config_url, "configuration", self.store.loopback_ok)
        if problem:
            raise LtiError("lti.configuration_invalid", f"not a usable configuration URL: {config_url[:100]!r}")
        try:
            config = self.oidc.fetch_json(config_url, "the LMS's openid-configuration")
        except OidcError as exc:
            raise LtiError("lti.unreachable", str(exc)) from exc
        names = ("issuer", "authorization_endpoint", "jwks_uri", "registration_endpoint")
        wrong = [k for k in names if url_problem(config.get(k), "configuration", self.store.loopback_ok)]
        if wrong:
            raise LtiError("lti.configuration_invalid", f"the openid-configuration lacks a usable {wrong[0]}")
        found = {k: str(config[k]).strip() for k in names}
        if origin_of(found["issuer"]) != origin_of(config_url):  # one host cannot register as another
            raise LtiError("lti.configuration_invalid", f"issuer {found['issuer'][:100]!r} is not where the "
                                                        "configuration came from")
        token = config.get("token_endpoint")
        return {**found, "token_endpoint": token if isinstance(token, str) and not url_problem(
                    token, "configuration", self.store.loopback_ok) else ""}

    def _register(self, token: str, config_url: str, registration_token: str) -> tuple[Registration, Tenant]:
        row, invite = self._take(token)
        try:
            platform = self._platform(config_url)
            status, answer = self.oidc.post_json(platform["registration_endpoint"], self.tool_configuration(),
                                                 registration_token, "the LMS's registration endpoint")
            given = answer.get(TOOL_CONFIG)
            tool: dict[str, Any] = given if isinstance(given, dict) else {}
            client_id, deployment = answer.get("client_id"), tool.get("deployment_id")
            if status not in (200, 201) or not isinstance(client_id, str) or not client_id:
                raise LtiError("lti.registration_refused", f"the LMS answered {status} without a client id")
            if not isinstance(deployment, str) or not deployment:
                raise LtiError("lti.registration_no_deployment", "the LMS named no deployment id")
            tenant = Tenant(str(invite["tenant"]), str(invite.get("slug") or ""), "")
            reg = self.store.add(tenant, str(invite.get("actor_id") or ""), str(invite.get("actor") or "cli"),
                                 platform["issuer"], client_id, [deployment], platform["jwks_uri"],
                                 platform["authorization_endpoint"], platform["token_endpoint"], "admin")
        except OidcError as exc:
            self._give_back(row)
            raise LtiError("lti.unreachable", str(exc)) from exc
        except (LtiError, PBError):
            self._give_back(row)
            raise
        return reg, tenant

    async def register(self, token: str, config_url: str, registration_token: str) -> Registration:
        """Register the LMS that opened the invitation; LtiError saying why not (the invitation then stays)."""
        reg, tenant = await asyncio.to_thread(self._register, token[:200], config_url[:1000],
                                              registration_token[:4000])
        log.info("lti: %s registered itself to tenant %s (dynamic registration)", reg.issuer, tenant.slug)
        return reg
