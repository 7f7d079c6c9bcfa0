"""Sign-in and session checks against the PocketBase `users` collection."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from r42_app.core.errors import UserError
from r42_app.core.identity import SignedInUser
from r42_app.core.messages import DEFAULT_LANGUAGE, language_of
from r42_app.core.ratelimit import FailureCounter
from r42_app.services.runtime.shared_state import (
    MemorySharedState,
    SharedFailureLimiter,
    SharedState,
    SharedStateUnavailable,
)
from r42_app.services.store.batched import Batched
from r42_app.services.store.pb import PBError, PocketBase, pb_time, quote

log = logging.getLogger(__name__)

ROLES = ("learner", "admin")


class AuthError(UserError):
    """Sign-in failed, or PocketBase could not be asked; `user_message` says so to the user."""


class WrongPassword(AuthError):
    """PocketBase refused the email and password (what the per-address limit counts)."""


@dataclass(frozen=True)
class Session:
    token: str
    user: SignedInUser


def _user_from(record: dict) -> SignedInUser:
    tenant = (record.get("expand") or {}).get("tenant") or {}
    role = record["role"] if record.get("role") in ROLES else "learner"
    return SignedInUser(
        id=record["id"],
        email=record.get("email", ""),
        name=record.get("name") or record.get("email", "").split("@")[0],
        role=role,
        tenant_id=record.get("tenant", ""),
        tenant_slug=tenant.get("slug", ""),
        tenant_name=tenant.get("name", ""),
        tenant_active=tenant.get("state") != "disabled",
        language=language_of(record.get("language")) or language_of(tenant.get("language")) or DEFAULT_LANGUAGE,
    )


SESSION_S = 8 * 3600  # a browser's token dies this long after its sign-in, however it is used (SECURITY.md)
SESSION_JITTER_S = 100  # ... less up to this many seconds, so that sign-ins in the same second get tokens of their own
CHECK_CACHE_S = 15.0  # an API token verified this recently is not asked about again
CHECK_CACHE_SIZE = 10_000
MAX_TOKEN_CHECKS = 200  # tokens in one token-checks request (pb_hooks/r42_rules.js MAX_TOKENS)
SIGNIN_FAILURES_PER_MINUTE = 10  # per client address, through the app


class AuthService:
    """Signs users in and out and verifies their tokens; each call uses a fresh connection (no shared token).

    With `admin` (the app's superuser connection) sign-ins carry the superuser token: PocketBase's
    per-IP rate limits then leave the app alone (every browser's sign-in reaches PocketBase from this
    process's address), while its sign-in hook still throttles each account (pb_hooks/r42_rules.js).
    """

    def __init__(self, pb_url: str, admin: PocketBase | None = None, failures: FailureCounter | None = None,
                 session_s: int = SESSION_S, shared: SharedState | None = None,
                 passwords_allowed: Callable[[str], bool] | None = None):
        self.pb_url = pb_url
        # False for an address whose organisation signs in only through its identity provider (store/sso.py)
        self.passwords_allowed = passwords_allowed
        self.admin = admin
        self.session_s = session_s
        # sessions ended by a sign-out, for the tabs' short session caches (`ended_since`): the workers' shared state
        self.shared = shared if shared is not None else MemorySharedState()
        self._shared_down_said = -1e9
        self._http: httpx.Client | None = None  # shared by `check` (httpx clients are thread-safe)
        self._checked: dict[str, tuple[Session, float, float]] = {}  # token -> session, monotonic and wall clock
        # wrong passwords per browser address, in the shared state (the workers' Redis, or this process's memory)
        self.failures: FailureCounter = failures if failures is not None else SharedFailureLimiter(
            self.shared, "signin", limit=SIGNIN_FAILURES_PER_MINUTE, window=60.0)
        # the API tokens of requests that arrive together: one request (pb_hooks `/api/r42/token-checks`) per batch
        self._token_checks: Batched[str, Session | None] = Batched(self.checks, max_batch=MAX_TOKEN_CHECKS)

    async def sign_in_from(self, client: str, email: str, password: str) -> Session:
        """Sign in from a browser at address `client`: at most SIGNIN_FAILURES_PER_MINUTE wrong passwords a
        minute per address, which catches one guess at each of many accounts (PocketBase limits each
        account). The attempt is counted before it is sent, so tabs trying at the same moment cannot all
        pass the check, and given back unless it was a wrong password. PocketBase is asked in a thread."""
        if not client:
            return await asyncio.to_thread(self.sign_in, email, password)
        if await self.failures.take(client) > 0:
            raise AuthError("auth.too_many_attempts", f"too many wrong passwords from {client}")
        wrong = False
        try:
            return await asyncio.to_thread(self.sign_in, email, password)
        except WrongPassword:
            wrong = True
            raise
        finally:
            if not wrong:
                await self.failures.refund(client)

    def sign_in(self, email: str, password: str) -> Session:
        """Sign in with PocketBase (which throttles each account); `sign_in_from` adds the per-address limit."""
        email = (email or "").strip()
        if not email or not password:
            raise AuthError("auth.missing_fields", "email and password are required")
        if self.passwords_allowed is not None:
            try:
                allowed = self.passwords_allowed(email)
            except PBError as exc:
                raise AuthError("auth.unreachable", f"PocketBase is unreachable: {exc}") from exc
            if not allowed:
                raise AuthError("auth.sso_only", f"{email}: the organisation switched passwords off for its domain")
        body = {"identity": email, "password": password}
        params = {"expand": "tenant"}
        pb = self.admin or PocketBase(self.pb_url, timeout=10)
        try:
            data = pb.send("POST", "/api/collections/users/auth-with-password", params=params, body=body)
        except PBError as exc:
            if exc.status == 0:
                raise AuthError("auth.unreachable", f"PocketBase is unreachable: {exc}") from exc
            if exc.status == 429:
                raise AuthError("auth.too_many_attempts", "PocketBase: too many attempts for this account") from exc
            if exc.status == 403:  # the right password, refused by users.authRule: say which rule
                raise AuthError(self._refusal(email), f"{email}: PocketBase's authRule refused the sign-in") from exc
            raise WrongPassword("auth.wrong_password", "wrong email or password") from exc
        finally:
            if pb is not self.admin:
                pb.close()
        user = _user_from(data["record"])
        # users.authRule refuses these to everyone else; a sign-in carrying the superuser token passes every rule
        if not user.tenant_active:
            raise AuthError("auth.tenant_disabled", f"user {user.id}: tenant {user.tenant_slug} is disabled")
        if data["record"].get("state") in ("deactivated", "invited"):
            raise AuthError("auth.deactivated" if data["record"]["state"] == "deactivated" else "auth.failed",
                            f"user {user.id} is {data['record']['state']}")
        if not user.tenant_id:
            raise AuthError("auth.no_tenant", f"user {user.id} belongs to no tenant")
        session = Session(token=self._session_token(user.id, data["token"]), user=user)
        self._note_sign_in(user.id)
        return session

    def session_for(self, user_id: str) -> Session:
        """A session for a person whom another party vouched for (the organisation's identity provider, an LMS):
        the same PocketBase token as a password sign-in gives, refused as it would be (deactivated, invited,
        tenant disabled)."""
        if self.admin is None:
            raise AuthError("auth.failed", "sessions for a vouched-for person need the superuser connection")
        if not user_id.isalnum():
            raise AuthError("auth.failed", f"not a user id: {user_id[:40]!r}")
        try:
            record = self.admin.send("GET", f"/api/collections/users/records/{user_id}",
                                     params={"expand": "tenant"})
        except PBError as exc:
            raise AuthError("auth.unreachable" if exc.status == 0 else "auth.failed",
                            f"user {user_id} cannot be read: {exc}") from exc
        user = _user_from(record)
        if not user.tenant_active:
            raise AuthError("auth.tenant_disabled", f"user {user.id}: tenant {user.tenant_slug} is disabled")
        if record.get("state") in ("deactivated", "invited"):
            raise AuthError("auth.deactivated" if record["state"] == "deactivated" else "auth.failed",
                            f"user {user.id} is {record['state']}")
        if not user.tenant_id:
            raise AuthError("auth.no_tenant", f"user {user.id} belongs to no tenant")
        session = Session(token=self._session_token(user.id, ""), user=user)
        self._note_sign_in(user.id)
        return session

    def _refusal(self, email: str) -> str:
        """Why users.authRule refused a sign-in with the right password: the catalogue code to show."""
        row = None
        if self.admin is not None:
            try:
                row = self.admin.first("users", f"email = {quote(email.lower())}", expand="tenant")
            except PBError:
                row = None
        tenant = ((row or {}).get("expand") or {}).get("tenant") or {}
        if tenant.get("state") == "disabled":
            return "auth.tenant_disabled"
        if row is not None and self.passwords_allowed is not None:  # pb_hooks refuse an SSO-only domain's password
            try:
                if not self.passwords_allowed(email):
                    return "auth.sso_only"
            except PBError:
                pass
        if (row or {}).get("state") == "deactivated":
            return "auth.deactivated"
        return "auth.failed"

    def why_ended(self, user_id: str) -> str:
        """The catalogue code that says why a session of this user no longer works: deactivated, or simply ended
        (signed out, expired, a new password)."""
        if self.admin is None or not user_id:
            return "auth.session_ended"
        try:
            row = self.admin.first("users", f"id = {quote(user_id)}", fields="state")
        except PBError:
            return "auth.session_ended"
        return "auth.deactivated" if (row or {}).get("state") == "deactivated" else "auth.session_ended"

    def _note_sign_in(self, user_id: str) -> None:
        """When a person last signed in (/admin/people shows it); a failure costs nothing but the date."""
        if self.admin is None:
            return
        try:
            self.admin.update("users", user_id, {"last_sign_in": pb_time(datetime.now(UTC))})
        except PBError as exc:
            log.warning("could not note the sign-in of %s: %s", user_id, exc)

    def _session_token(self, user_id: str, signed_in: str) -> str:
        """The token the browser keeps: one that cannot be refreshed and ends `session_s` after this sign-in
        (PocketBase's impersonation, which only the superuser may ask for), so a token that a script ever
        read from localStorage is worth hours, not the sliding week of a refreshable one.
        A PocketBase token holds no more than its user, key and expiry (to the second): two sign-ins of one user in the
        same second would get the same token, and "Afmelden" on one device would end the other's too. So its life is
        shortened by a random few seconds (up to SESSION_JITTER_S, or a hundredth of it)."""
        if self.admin is None:
            return signed_in
        duration = self.session_s - secrets.randbelow(min(SESSION_JITTER_S, self.session_s // 100) + 1)
        try:
            return self.admin.send("POST", f"/api/collections/users/impersonate/{user_id}",
                                   body={"duration": duration})["token"]
        except PBError as exc:
            raise AuthError("auth.unreachable" if exc.status == 0 else "auth.failed",
                            f"PocketBase refused the session token: {exc}") from exc

    def sign_out(self, token: str, everywhere: bool = False) -> str:
        """End this session's token in PocketBase (pb_hooks `/api/r42/sign-out`: the token is listed as signed out),
        or with `everywhere` every token of its user (a new token key). PocketBase refuses them from then on, for the
        app and every REST client, and this worker forgets them. Returns the id of the user whose session(s) ended,
        "" when the token was no longer valid (nothing left to end); AuthError when PocketBase cannot be asked.
        Without the superuser connection the token ends itself (the route a REST client uses)."""
        self._checked.pop(token, None)
        if _live_claims(token) is None:
            return ""
        pb = self.admin or PocketBase(self.pb_url, token=token, timeout=10)
        body: dict[str, Any] = {"token": token, "everywhere": everywhere} if self.admin else {"everywhere": everywhere}
        try:
            found = pb.send("POST", "/api/r42/sign-out", body=body)
        except PBError as exc:
            if exc.status == 401 and self.admin is None:  # the token ended already
                return ""
            raise AuthError("auth.unreachable" if exc.status == 0 else "auth.sign_out_failed",
                            f"PocketBase did not end the session: {exc}") from exc
        finally:
            if pb is not self.admin:
                pb.close()
        user_id = str(found.get("user") or "") if isinstance(found, dict) else ""
        if everywhere and user_id:
            self._forget_user(user_id)
        return user_id

    async def sign_out_from(self, token: str, everywhere: bool = False) -> str:
        """`sign_out` from the event loop (PocketBase in a thread), then told to every worker (the shared state), so
        no tab's short session cache (state/auth.py VERIFY_TTL_S) keeps accepting the token, or, `everywhere`, any
        session of the user checked before now. Returns what `sign_out` returns."""
        user_id = await asyncio.to_thread(self.sign_out, token, everywhere)
        if user_id:
            key = _user_key(user_id) if everywhere else _token_key(token)
            ttl = max(self.session_s, SESSION_S) + CHECK_CACHE_S if everywhere else _ttl_of(token)
            try:
                await self.shared.note_ended(key, time.time(), ttl)
            except SharedStateUnavailable as exc:  # PocketBase refuses it; the other workers' tabs within VERIFY_TTL_S
                log.warning("could not tell the other workers that a session ended: %s", exc)
        return user_id

    async def sessions_ended(self, user_id: str) -> None:
        """Every session of this user ended elsewhere (a deactivation: PocketBase gave them a new token key): this
        worker forgets their checks, and every worker's tab caches hear it through the shared state."""
        self._forget_user(user_id)
        ttl = max(self.session_s, SESSION_S) + CHECK_CACHE_S
        try:
            await self.shared.note_ended(_user_key(user_id), time.time(), ttl)
        except SharedStateUnavailable as exc:  # PocketBase refuses their tokens anyway; the caches within their TTL
            log.warning("could not tell the other workers that %s's sessions ended: %s", user_id, exc)

    async def ended_since(self, token: str, user_id: str, since: float) -> bool:
        """Whether this token was signed out, or every session of this user ended at or after `since` (a time.time()
        of the last check with PocketBase), on any worker: the tab's cache must then ask PocketBase again. True when
        the shared state cannot be asked (PocketBase decides then)."""
        try:
            return await self.shared.ended_at([_token_key(token), _user_key(user_id)]) >= since
        except SharedStateUnavailable as exc:
            if time.monotonic() - self._shared_down_said > 60:  # said once a minute, not once a request
                self._shared_down_said = time.monotonic()
                log.warning("cannot tell whether sessions ended (%s); PocketBase is asked instead", exc)
            return True

    def set_language(self, user_id: str, language: str) -> None:
        """The person's own language (issue 52; "" goes back to their organisation's). Blocking: call it in a
        thread. This worker's checks of their tokens are forgotten, so its next request speaks the new language;
        another worker's within CHECK_CACHE_S."""
        if language and language_of(language) != language:
            raise ValueError(f"not a language R42 speaks: {language!r}")
        if self.admin is None:
            raise AuthError("auth.failed", "a person's language is stored through the superuser connection")
        self.admin.update("users", user_id, {"language": language})
        self._forget_user(user_id)

    def tenant_language(self, tenant_id: str) -> str:
        """The organisation's language (Dutch unless its admins chose another). Blocking."""
        row = self.admin.first("tenants", f"id = {quote(tenant_id)}", fields="language") \
            if tenant_id and self.admin is not None else None
        return language_of((row or {}).get("language")) or DEFAULT_LANGUAGE

    def forget(self, token: str) -> None:
        """This worker no longer remembers the token's check (the next request asks PocketBase again)."""
        self._checked.pop(token, None)

    def _forget_user(self, user_id: str) -> None:
        for token, (session, *_at) in list(self._checked.items()):
            if session.user.id == user_id:
                self._checked.pop(token, None)

    def verify(self, token: str) -> Session | None:
        """The session behind a stored token, checked with PocketBase now, or None when it is invalid, revoked
        or expired. Nothing is renewed: a session ends when its token does (SECURITY.md)."""
        return self.check(token, fresh=True)

    def check(self, token: str, fresh: bool = False) -> Session | None:
        """The session behind an API client's token, cheaply: a verified token is remembered for
        CHECK_CACHE_S (so a role change or a password change counts within that time; a sign-out at once, see
        `remembered_now`; a chat turn's guard checks the token in PocketBase anyway), an expired one is
        refused without asking PocketBase, and the check reads the user's own record with the token
        itself (PocketBase checks the signature) on one shared connection, without minting a new token.
        `fresh` (before a write) asks PocketBase whatever the cache says."""
        if not token or len(token) > 4096:
            return None
        now = time.monotonic()
        session = None if fresh else self.remembered(token)
        if session is not None:
            return session
        claims = _live_claims(token)
        if claims is None:
            return None
        try:
            resp = self._shared().get(f"/api/collections/users/records/{claims.get('id', '')}",
                                      params={"expand": "tenant"}, headers={"Authorization": token})
        except httpx.HTTPError as exc:
            raise AuthError("auth.unreachable", f"PocketBase is unreachable: {exc}") from exc
        if resp.status_code != 200:
            self._checked.pop(token, None)
            return None
        session = Session(token=token, user=_user_from(resp.json()))
        self._remember(token, session, now, float(claims["exp"]))
        return session

    async def check_soon(self, token: str) -> Session | None:
        """`check` from the event loop: a token not remembered is checked together with the tokens of the requests
        that arrive while a check is on its way, in one request and one thread hop (`checks`). Each is checked after
        its request came in, as fresh as a check of its own. Without the superuser connection: `check` in a thread."""
        if (session := self.remembered(token)) is not None:
            return session
        if self.admin is None:
            return await asyncio.to_thread(self.check, token)
        try:
            return await self._token_checks.call(token)
        except PBError as exc:
            raise AuthError("auth.unreachable", f"PocketBase could not check the token: {exc}") from exc

    def checks(self, tokens: list[str]) -> list[Session | None]:
        """`check` for several tokens in one PocketBase request (the superuser's `/api/r42/token-checks`): a session
        or None per token, in order. Tokens that cannot be valid (malformed, expired) are refused here without
        asking; the others are verified by PocketBase (signature, expiry, the user's token key) and remembered."""
        assert self.admin is not None
        now = time.monotonic()
        claims = [_live_claims(t) for t in tokens]
        ask = [i for i, c in enumerate(claims) if c is not None]
        out: list[Session | None] = [None] * len(tokens)
        if not ask:
            return out
        found = self.admin.send("POST", "/api/r42/token-checks", body={"tokens": [tokens[i] for i in ask]})
        results = found.get("results") if isinstance(found, dict) else None
        if not isinstance(results, list) or len(results) != len(ask):
            raise PBError(502, "token-checks answered without one result per token")
        for i, one in zip(ask, results, strict=True):
            token = tokens[i]
            user = one.get("user") if isinstance(one, dict) else None
            if not isinstance(user, dict) or not user.get("id"):
                self._checked.pop(token, None)
                continue
            tenant = one.get("tenant")
            session = Session(token=token, user=_user_from({**user, "expand": {"tenant": tenant}}
                                                           if isinstance(tenant, dict) else user))
            out[i] = session
            self._remember(token, session, now, float(claims[i]["exp"]))  # type: ignore[index]
        return out

    def _remember(self, token: str, session: Session, now: float, exp: float) -> None:
        if not session.user.tenant_active:  # asked again every time: enabling the tenant counts at once
            self._checked.pop(token, None)
            return
        if len(self._checked) >= CHECK_CACHE_SIZE:
            self._checked.clear()  # bounded memory; the next checks ask again
        # remembered until the cache window ends, or the token's own end if that comes first
        self._checked[token] = (session, min(now, now - CHECK_CACHE_S + exp - time.time()),
                                time.time() - (time.monotonic() - now))

    def remembered(self, token: str) -> Session | None:
        """The session of a token checked less than CHECK_CACHE_S ago, else None; no I/O, so the API
        answers a flood of one token without a thread hop per request."""
        cached = self._checked.get(token)
        if cached is not None and time.monotonic() - cached[1] < CHECK_CACHE_S:
            return cached[0]
        return None

    async def remembered_now(self, token: str) -> Session | None:
        """`remembered`, unless the token (or every session of its user) was signed out since it was checked, on any
        worker (the shared state: no PocketBase request); such a token is forgotten, and asked about again."""
        session = self.remembered(token)
        cached = self._checked.get(token)
        if session is None or cached is None:
            return None
        if await self.ended_since(token, session.user.id, cached[2]):
            self._checked.pop(token, None)
            return None
        return session

    def warm(self) -> None:
        """Build the token checks' connection (its SSL context alone is ~20 ms) and open it, before the first
        question needs it (warm before ready)."""
        try:
            self._shared().get("/api/health")
        except httpx.HTTPError:
            pass  # the first check then says what is wrong

    def _shared(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(base_url=self.pb_url, timeout=10)
        return self._http


def _token_key(token: str) -> str:
    """A token's name in the shared state: its SHA-256 (the shared state holds no usable token)."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()


def _user_key(user_id: str) -> str:
    return "user:" + user_id


def _ttl_of(token: str) -> float:
    """How long a token may still be used (and so be cached): until its expiry, a minute at least."""
    claims = _live_claims(token) or {}
    try:
        return max(60.0, float(claims.get("exp", 0)) - time.time() + CHECK_CACHE_S)
    except (TypeError, ValueError):
        return 60.0


def _live_claims(token: str) -> dict | None:
    """The claims of a token that may still be valid: an auth token, not expired (unverified: `_claims`); None for
    anything else, a malformed expiry included, so that it is refused without asking PocketBase."""
    claims = _claims(token) if isinstance(token, str) and 0 < len(token) <= 4096 else None
    if claims is None or claims.get("type") != "auth":
        return None
    try:
        return claims if float(claims.get("exp", 0)) > time.time() else None
    except (TypeError, ValueError):
        return None


def _claims(token: str) -> dict | None:
    """The (unverified) payload of a JWT: only to refuse expired tokens early and find the user id;
    PocketBase verifies the signature when the token is used."""
    try:
        payload = token.split(".")[1]
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    return data if isinstance(data, dict) else None
