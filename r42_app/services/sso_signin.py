"""Signing in through the organisation's identity provider, start to finish (api.py's `/auth/oidc/start` and
`/auth/oidc/callback`, and the page that redeems the result):

1. `start`: the e-mail's domain names the tenant; a fresh `state`, `nonce` and PKCE verifier are kept in the shared
   state for ROUND_TRIP_S (any worker may receive the callback), bound to this browser by a random cookie (only its
   hash is kept), and the browser goes to the provider.
2. `finish`: the callback's `state` is taken once (a replay finds nothing), the cookie must match, the code is
   exchanged with the verifier, the ID token is checked (adapters/oidc.py), and the person is found or created
   (store/sso.py). The session token is not put in the URL: a one-time sign-in code is, good for CODE_S seconds
   and in this browser only.
3. `redeem`: the page (state/auth.py) trades that code for the session, once.

Every refusal is an SsoError or OidcError with a catalogue code; the log gets the reason, never a token or secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from r42_app.core.errors import UserError
from r42_app.core.identity import Tenant
from r42_app.core.sso import SsoConfig, SsoError, binding, issuer_problem, person_from, safe_next
from r42_app.services.adapters.oidc import OidcClient, OidcError
from r42_app.services.runtime.shared_state import SharedState
from r42_app.services.store.auth import AuthService, Session
from r42_app.services.store.sso import SsoStore

log = logging.getLogger(__name__)

ROUND_TRIP_S = 600.0  # from leaving for the provider to coming back
CODE_S = 60.0  # a sign-in code, from the callback to the page that redeems it
COOKIE = "r42_sso"  # binds a round trip to the browser that started it (HttpOnly, SameSite=Lax)
CODE_PARAM = "r42_signin"  # the one-time code on the page the browser returns to
ERROR_PARAM = "r42_signin_error"  # ... or the catalogue code of why it did not work


@dataclass(frozen=True)
class Started:
    url: str  # the provider's authorization URL
    cookie: str  # the value of COOKIE to set


@dataclass(frozen=True)
class Finished:
    next_path: str  # where the browser goes back to, with CODE_PARAM
    user_id: str


def with_param(path: str, name: str, value: str) -> str:
    """`path` (one of ours, safe_next'ed) with one query parameter added."""
    parts = urlsplit(safe_next(path))
    query = "&".join(q for q in (parts.query, urlencode({name: value})) if q)
    return urlunsplit(("", "", parts.path, query, ""))


class SsoSignIn:
    def __init__(self, store: SsoStore, oidc: OidcClient, shared: SharedState, auth: AuthService):
        self.store, self.oidc, self.shared, self.auth = store, oidc, shared, auth

    def check_issuer(self, issuer: str) -> None:
        """SsoError or OidcError unless `issuer` is a usable URL whose discovery document names it (what saving a
        tenant's settings checks first: a typo is said then, not at someone's first sign-in)."""
        problem = issuer_problem(issuer, self.store.loopback_ok)
        if problem:
            raise SsoError(problem, f"not a usable issuer URL: {str(issuer)[:100]!r}")
        self.oidc.provider(issuer.strip())

    async def check_provider(self, issuer: str) -> None:
        await asyncio.to_thread(self.check_issuer, issuer)

    async def start(self, email: str, next_path: str, redirect_uri: str, cookie: str = "") -> Started:
        """Where the browser goes to sign in with `email`'s organisation (SsoError when its domain has none)."""
        config = await asyncio.to_thread(self.store.for_email, email)
        if config is None:
            raise SsoError("sso.domain_not_allowed", "no tenant signs this domain in through a provider",
                           domain=email.rsplit("@", 1)[-1][:100] if "@" in email else "?")
        provider = await asyncio.to_thread(self.oidc.provider, config.issuer)
        state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48)
        cookie = cookie if len(cookie) >= 32 else secrets.token_urlsafe(32)
        trip = {"tenant": config.tenant_id, "issuer": config.issuer, "nonce": nonce, "verifier": verifier,
                "next": safe_next(next_path), "browser": binding(cookie)}
        await self.shared.put_once(f"oidc:{state}", json.dumps(trip), ROUND_TRIP_S)
        url = self.oidc.authorization_url(provider, config.client_id, redirect_uri, state, nonce, verifier,
                                          login_hint=email.strip().lower())
        log.info("sso: sign-in of a person of tenant %s sent to %s", config.tenant_slug, config.issuer)
        return Started(url=url, cookie=cookie)

    async def finish(self, state: str, code: str, error: str, cookie: str, redirect_uri: str) -> Finished:
        """The callback: everything checked, the person found or made, a sign-in code kept for the page."""
        raw = await self.shared.take_once(f"oidc:{state[:200]}") if state else None
        if raw is None:
            raise SsoError("sso.expired", "unknown, used or expired state")
        trip = json.loads(raw)
        if not cookie or binding(cookie) != trip.get("browser"):
            raise SsoError("sso.expired", "the round trip was started in another browser")
        next_path = str(trip.get("next") or "/")
        try:
            return await self._finish(trip, next_path, code, error, cookie, redirect_uri)
        except UserError as exc:  # back to the page the person had opened, saying why
            exc.fields.setdefault("next", next_path)
            raise

    async def _finish(self, trip: dict, next_path: str, code: str, error: str, cookie: str,
                      redirect_uri: str) -> Finished:
        if error:
            raise SsoError("sso.cancelled", f"the provider answered error={error[:60]!r}")
        if not code:
            raise SsoError("sso.token_refused", "the callback has no code")
        config = await asyncio.to_thread(self._config, trip["tenant"], trip["issuer"])
        provider = await asyncio.to_thread(self.oidc.provider, config.issuer)
        secret = await asyncio.to_thread(self.store.secret, config.tenant_id)
        id_token = await asyncio.to_thread(self.oidc.exchange, provider, config.client_id, secret, code[:2000],
                                           trip["verifier"], redirect_uri)
        claims = await asyncio.to_thread(self.oidc.verify, provider, id_token, config.client_id, trip["nonce"])
        person = person_from(claims, config)
        user_id = await asyncio.to_thread(self.store.person, config, person)
        session = await asyncio.to_thread(self.auth.session_for, user_id)
        sign_in_code = await self.code_for(session.token, cookie)
        log.info("sso: %s signed in to tenant %s", user_id, config.tenant_slug)
        return Finished(next_path=with_param(next_path, CODE_PARAM, sign_in_code), user_id=user_id)

    def _config(self, tenant_id: str, issuer: str) -> SsoConfig:
        config = self.store.get(Tenant(tenant_id, "", ""), enabled_only=True)
        if config is None or config.issuer != issuer:  # switched off, changed or disabled during the round trip
            raise SsoError("sso.expired", "the tenant's sign-in settings changed during the round trip")
        return config

    async def code_for(self, token: str, cookie: str = "") -> str:
        """A one-time sign-in code for a session token (bound to the browser's `cookie` when there is one): what an
        LMS launch lands with, and how a page framed by an LMS opens itself in a new tab, signed in."""
        sign_in_code = secrets.token_urlsafe(32)
        await self.shared.put_once(f"signin:{sign_in_code}", json.dumps(
            {"token": token, "browser": binding(cookie) if cookie else ""}), CODE_S)
        return sign_in_code

    async def redeem(self, sign_in_code: str, cookie: str) -> Session | None:
        """The session for a sign-in code from `finish`, once, in the browser that did the round trip."""
        if not sign_in_code or len(sign_in_code) > 100:
            return None
        raw = await self.shared.take_once(f"signin:{sign_in_code}")
        if raw is None:
            return None
        kept = json.loads(raw)
        bound = kept.get("browser")  # "" for a launch from an LMS: a frame has no cookie to bind it to
        if bound and (not cookie or binding(cookie) != bound):
            log.warning("sso: a sign-in code was brought by another browser; refused")
            return None
        return await asyncio.to_thread(self.auth.verify, kept["token"])


__all__ = ["CODE_PARAM", "COOKIE", "ERROR_PARAM", "OidcError", "SsoError", "SsoSignIn", "with_param"]
