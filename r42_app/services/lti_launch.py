"""Opening R42 from a learning environment (LTI 1.3 resource link launch; issue 48, part 2):

1. `login` (the platform's third-party login initiation, `/lti/login`): the registration named by `iss` (and
   `client_id`), a fresh `state` and `nonce` kept once in the shared state for ROUND_TRIP_S, and the URL of the
   platform's authentication request (response_type id_token, response_mode form_post, prompt none).
2. `launch` (the form post to `/lti/launch`): the state taken once (a replay finds nothing), the ID token checked
   against the platform's key set (adapters/oidc.py `verify_token`: signature, iss, aud/azp, exp, iat, the nonce
   of this state), the message checked (core/lti.py: type, version, deployment, subject), the person found or made
   (store/lti.py), and a one-time sign-in code for the page the launch targets. A framed launch has no cookie
   to bind to (third-party cookies are blocked), so this code is bound to nothing but itself: single use, CODE_S.
   The page also gets a signed permission to be framed by the platform's origins (core/lti.py `frame_grant`):
   every other page of R42 refuses to be framed.
3. Deep linking (a teacher adds R42 to a course): the launch of an LtiDeepLinkingRequest, by someone who is an
   admin here, opens a picker (`picker`: the tenant's topics and "the assistant") under a ticket kept once for
   PICK_S; `/lti/deep-link` takes the ticket and answers with the signed LtiDeepLinkingResponse (the tool's key,
   /lti/jwks) that the browser posts back to the platform.

Every refusal is an LtiError or OidcError with a catalogue code; nothing of a token goes to the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from r42_app.core.identity import Tenant
from r42_app.core.lti import DEEP_LINKING, FRAME_PARAM, Launch, LtiError, deep_link_response, frame_grant, launch_of
from r42_app.services.adapters.oidc import OidcClient, ToolKey
from r42_app.services.runtime.shared_state import SharedState
from r42_app.services.sso_signin import CODE_PARAM, with_param
from r42_app.services.store.auth import AuthService
from r42_app.services.store.lti import LtiStore

log = logging.getLogger(__name__)

ROUND_TRIP_S = 300.0  # from the login initiation to the launch's form post
PICK_S = 1800.0  # a teacher's time to pick what to add to the course


@dataclass(frozen=True)
class Landed:
    path: str  # the app page to open, with the one-time sign-in code ("" for deep linking: the picker)
    user_id: str
    launch: Launch
    ticket: str = ""  # deep linking: what the picker's form posts back to /lti/deep-link
    tenant_id: str = ""


@dataclass(frozen=True)
class Picked:
    """The signed deep-linking response and where the browser posts it."""

    return_url: str
    jwt: str
    frame_origins: tuple[str, ...]


class LtiLaunches:
    def __init__(self, store: LtiStore, oidc: OidcClient, shared: SharedState, auth: AuthService,
                 own_origins: tuple[str, ...], tool_key: Callable[[], ToolKey], frame_key: Callable[[], bytes],
                 link_base: str, topics: Callable[[str], list[tuple[str, str]]],
                 code_for: Callable[[str], Awaitable[str]]):
        self.store, self.oidc, self.shared, self.auth = store, oidc, shared, auth
        self.own_origins = own_origins
        self.tool_key, self.frame_key = tool_key, frame_key  # app secrets, read once on first use (a thread)
        self.link_base = link_base.rstrip("/")
        self.topics = topics  # tenant id -> [(slug, title)] of its topics, for the deep-linking picker
        self.code_for = code_for  # a one-time sign-in code for a session token (SsoSignIn.code_for)

    async def choices(self, tenant_id: str) -> list[tuple[str, str]]:
        """What a teacher may add to a course: the assistant (R42's start page) and each topic's page, as
        (path, title)."""
        topics = await asyncio.to_thread(self.topics, tenant_id)
        return [("/", "R42 (de assistent)"), *((f"/topics/{slug}", title) for slug, title in topics)]

    async def login(self, params: dict[str, str], launch_url: str) -> str:
        """The platform's authentication request URL for a login initiation (LtiError when the platform is not
        registered or the request is incomplete)."""
        issuer, hint = params.get("iss", "")[:1000], params.get("login_hint", "")[:2000]
        if not issuer or not hint:
            raise LtiError("lti.invalid_launch", "a login initiation needs iss and login_hint")
        reg = await asyncio.to_thread(self.store.find, issuer, params.get("client_id", "")[:255])
        if reg is None:
            raise LtiError("lti.unknown_platform", f"no registration for {issuer[:100]!r}")
        deployment = params.get("lti_deployment_id", "")
        if deployment and deployment not in reg.deployment_ids:
            raise LtiError("lti.unknown_deployment", f"deployment {deployment[:80]!r} is not registered")
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        await self.shared.put_once(f"lti:{state}", json.dumps(
            {"issuer": reg.issuer, "client_id": reg.client_id, "nonce": nonce}), ROUND_TRIP_S)
        query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
                 "client_id": reg.client_id, "redirect_uri": launch_url, "login_hint": hint, "state": state,
                 "nonce": nonce}
        if params.get("lti_message_hint"):
            query["lti_message_hint"] = params["lti_message_hint"][:2000]
        sep = "&" if "?" in reg.auth_url else "?"
        return reg.auth_url + sep + urlencode(query)

    async def launch(self, id_token: str, state: str) -> Landed:
        raw = await self.shared.take_once(f"lti:{state[:200]}") if state else None
        if raw is None:
            raise LtiError("lti.expired", "unknown, used or expired state")
        trip = json.loads(raw)
        reg = await asyncio.to_thread(self.store.find, trip["issuer"], trip["client_id"])
        if reg is None:  # removed during the round trip
            raise LtiError("lti.unknown_platform", f"{trip['issuer']} is no longer registered")
        claims = await asyncio.to_thread(self.oidc.verify_token, reg.jwks_url, reg.issuer, id_token[:20000],
                                         reg.client_id, trip["nonce"], "lti")
        launch = launch_of(claims, reg, self.own_origins)
        tenant = Tenant(reg.tenant_id, "", "")
        user_id = await asyncio.to_thread(self.store.person, reg, tenant, launch)
        session = await asyncio.to_thread(self.auth.session_for, user_id)
        if launch.message_type == DEEP_LINKING:
            if session.user.role != "admin":
                raise LtiError("lti.deep_link_admins", f"{user_id} is no admin here and cannot add R42 to a course")
            ticket = secrets.token_urlsafe(32)
            await self.shared.put_once(f"lti-dl:{ticket}", json.dumps({
                "issuer": reg.issuer, "client_id": reg.client_id, "deployment_id": launch.deployment_id,
                "return_url": launch.return_url, "data": launch.return_data, "tenant": reg.tenant_id,
                "user": user_id, "frame": list(launch.frame_origins)}), PICK_S)
            log.info("lti: %s opened deep linking in tenant %s from %s", user_id, session.user.tenant_slug, reg.issuer)
            return Landed(path="", user_id=user_id, launch=launch, ticket=ticket, tenant_id=reg.tenant_id)
        code = await self.code_for(session.token)  # bound to no browser: a frame has no cookie of its own
        log.info("lti: %s launched into tenant %s from %s", user_id, session.user.tenant_slug, reg.issuer)
        path = with_param(launch.target, CODE_PARAM, code)
        if launch.frame_origins:
            key = await asyncio.to_thread(self.frame_key)
            path = with_param(path, FRAME_PARAM, frame_grant(launch.frame_origins, key, time.time()))
        return Landed(path=path, user_id=user_id, launch=launch)

    async def pick(self, ticket: str, target: str) -> Picked:
        """The teacher's choice (`target`: "/" or one of the tenant's topic pages) as the signed deep-linking
        response; the ticket is used up (LtiError when unknown or used; a choice that is not on offer leaves it)."""
        raw = await self.shared.take_once(f"lti-dl:{ticket[:200]}") if ticket else None
        if raw is None:
            raise LtiError("lti.expired", "unknown, used or expired deep-linking ticket")
        trip = json.loads(raw)
        title = dict(await self.choices(trip["tenant"])).get(target)
        if title is None:
            await self.shared.put_once(f"lti-dl:{ticket[:200]}", raw, PICK_S)
            raise LtiError("lti.deep_link_choice", f"{target[:100]!r} is not on offer")
        reg = await asyncio.to_thread(self.store.find, trip["issuer"], trip["client_id"])
        if reg is None:
            raise LtiError("lti.unknown_platform", f"{trip['issuer']} is no longer registered")
        key = await asyncio.to_thread(self.tool_key)
        claims = deep_link_response(reg, trip["deployment_id"], trip["data"], title, self.link_base + target,
                                    time.time(), secrets.token_urlsafe(16))
        log.info("lti: %s added %s to a course of %s", trip["user"], target, reg.issuer)
        return Picked(return_url=trip["return_url"], jwt=key.sign(claims), frame_origins=tuple(trip["frame"]))
