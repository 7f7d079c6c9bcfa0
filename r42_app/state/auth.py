"""AuthState: who is signed in, decided on the server from a PocketBase token."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

import reflex as rx

from r42_app.container import services
from r42_app.core.identity import SignedInUser
from r42_app.core.lti import FRAME_PARAM
from r42_app.core.messages import (
    CATALOGUE,
    DEFAULT_LANGUAGE,
    UI_TEXTS,
    best_language,
    language_of,
    msg,
    set_language,
)
from r42_app.core.sso import safe_next
from r42_app.services.runtime.shared_state import SharedStateUnavailable
from r42_app.services.sso_signin import CODE_PARAM, COOKIE, ERROR_PARAM
from r42_app.services.store.auth import AuthError, Session
from r42_app.services.store.pb import PBError
from r42_app.services.uploads import keep_permit
from r42_app.state.language import LanguageState

log = logging.getLogger(__name__)

LOOKUPS_PER_MINUTE, LOOKUPS_BURST = 30.0, 10  # e-mail domains looked up on leaving the field, per address
VERIFY_TTL_S = 30.0  # reads act on a role at most this old (unless signed out since); page loads and writes check now

# Route pattern -> the event that loads that page's data; sign-in runs it so the page fills in place.
PAGE_LOADERS: dict[str, Callable[[], Any]] = {}


def page_loader(route: str, handler: Any) -> Any:
    """Register `handler` as the loader of `route` (called by the page modules)."""
    PAGE_LOADERS[route] = handler
    return handler


# What the states built on this one do when a session begins or ends; they register on import (state/chat.py,
# state/quiz.py). This state imports none of them, so the states' imports have no circle.
AFTER_SIGN_IN: list[Any] = []  # events returned after a sign-in (the chat window checks whether R42 is on)
ON_SIGN_OUT: list[Callable[[SignedInUser | None], Awaitable[list]]] = []  # -> events (a quiz ends, the chat forgets)
# opened from an LMS: -> the event that follows (R42's window opens on the page)
ON_FRAMED_LAUNCH: list[Callable[[AuthState, SignedInUser], Awaitable[Any]]] = []


_DEMO_KNOWN: dict[str, tuple[bool, float]] = {}  # "demo" -> (whether the demo tenant exists, when asked: monotonic)
DEMO_RECHECK_S = 300.0


def _demo_exists() -> bool:
    """Whether the demo tenant exists, asked at most once per DEMO_RECHECK_S per process (a signed-out page load
    asks; an organisation without the demo tenant has many)."""
    known = _DEMO_KNOWN.get("demo")
    if known is not None and time.monotonic() - known[1] < DEMO_RECHECK_S:
        return known[0]
    try:
        found = services().kb.tenant("demo") is not None
    except Exception as exc:  # noqa: BLE001 - a hint is not worth an error on the sign-in page
        log.info("could not tell whether the demo tenant exists: %s", exc)
        return False
    _DEMO_KNOWN["demo"] = (found, time.monotonic())
    return found


# what a return from the organisation's sign-in page may say went wrong (no placeholders: nothing from the URL is shown)
SIGN_IN_ERRORS = frozenset(code for code, text in CATALOGUE.items()
                           if code.split(".")[0] in ("sso", "auth") and "{" not in text)


def _cookie(header: str, name: str) -> str:
    try:
        jar = SimpleCookie(header or "")
    except CookieError:
        return ""
    return jar[name].value if name in jar else ""


class AuthState(rx.State):
    """The signed-in user. Only server code sets these vars (there are no client setters)."""

    session_token: str = rx.LocalStorage("", name="r42.session", sync=True)
    checked: bool = False
    signing_in: bool = False
    signin_error: str = ""
    _error_for_next_page: bool = False  # the refusal was said on the way back from the provider: keep it once
    demo_hint: bool = False  # the sign-in card mentions the demo accounts (only where the demo tenant exists)
    sso_name: str = ""  # the e-mail typed belongs to an organisation that signs in through its own provider
    sso_href: str = ""  # ... and this starts that (a link of ours: /auth/oidc/start?email=&next=)
    user_id: str = ""
    user_name: str = ""
    user_email: str = ""
    role: str = ""
    tenant_name: str = ""
    _spoken: str = ""  # the language LanguageState was last given (asked for only when it changes)
    _user: SignedInUser | None = None
    _verified_at: float = 0.0  # time.time() of the last check with PocketBase (wall clock: workers share it)
    _verified_token: str = ""

    @rx.var(cache=False)
    def section(self) -> str:
        """Which part of the app this page is in, so the bar can show where you are."""
        path = self.router.page.path or "/"
        for prefix, name in (("/graph", "graph"), ("/testen", "quiz"), ("/admin", "admin")):
            if path.startswith(prefix):
                return name
        return "learn"

    @rx.var
    def signed_in(self) -> bool:
        return self.user_id != ""

    @rx.var
    def is_admin(self) -> bool:
        return self.role == "admin"

    @rx.var
    def initials(self) -> str:
        parts = [p for p in self.user_name.split() if p[:1].isalpha()]
        return "".join(p[0] for p in parts[:1] + parts[-1:]).upper() if parts else "?"

    # -- server-side helpers (not events) ---------------------------------------

    async def _speak(self, language: str | None) -> None:
        """The pages speak `language` from now on (Dutch for one R42 does not speak), and so does msg()."""
        lang = language_of(language) or DEFAULT_LANGUAGE
        set_language(lang)
        if lang != self._spoken:
            speech = await self.get_state(LanguageState)
            if speech.language != lang:
                speech.language, speech.ui = lang, UI_TEXTS.get(lang, {})
            self._spoken = lang

    async def _applied(self, session: Session | None) -> None:
        """`_apply`, and the pages speak the person's language (before sign-in: the browser's)."""
        self._apply(session)
        await self._speak(session.user.language if session is not None
                          else best_language(self.router.headers.accept_language))

    def _apply(self, session: Session | None) -> None:
        if session is None:
            self._user, self._verified_at, self._verified_token = None, 0.0, ""
            self.user_id = self.user_name = self.user_email = self.role = self.tenant_name = ""
            self.session_token = ""
            return
        user = session.user
        self._user, self._verified_at, self._verified_token = user, time.time(), session.token
        self.session_token = session.token
        self.user_id = user.id
        self.user_name = user.name
        self.user_email = user.email
        self.role = user.role
        self.tenant_name = user.tenant_name

    async def user(self, fresh: bool = False) -> SignedInUser | None:
        """The signed-in user as PocketBase says now: the token is checked again when `fresh` (page
        loads, every write), when the last check is older than VERIFY_TTL_S, or when the token, or every
        session of the user, was signed out since (on any worker: AuthService.ended_since), so a changed role or
        tenant counts at once and a revoked token signs this tab out with a message."""
        token = self.session_token
        if not token:
            if self._user is not None:
                self._apply(None)
            if not self.checked:  # (a var set is sent to the page even when it holds the same value)
                self.checked = True
            await self._speak(best_language(self.router.headers.accept_language))  # before sign-in: the browser's
            return None
        age = time.time() - self._verified_at
        stale = self._user is None or token != self._verified_token or fresh or age >= VERIFY_TTL_S
        if not stale and self._user is not None:
            stale = await services().auth.ended_since(token, self._user.id, self._verified_at)
        if stale:
            try:
                session = await asyncio.to_thread(services().auth.verify, token)
            except AuthError as exc:  # PocketBase unreachable: keep what we knew; writes fail on their own
                log.warning("session check failed: %s", exc)
            else:
                if session is None:  # a stored token that no longer works: say why the sign-in card is back
                    log.info("session of %s ended (token revoked or expired)", self._user.id if self._user else "?")
                    why = await asyncio.to_thread(services().auth.why_ended, self._user.id if self._user else "")
                    self.signin_error = msg(why)
                elif not session.user.tenant_active:  # `r42 tenant disable`: the card comes back, saying why
                    log.info("session of %s refused: tenant %s is disabled", session.user.id, session.user.tenant_slug)
                    self.signin_error = msg("auth.tenant_disabled")
                    session = None
                self._apply(session)
        if not self.checked:
            self.checked = True
        if self._user is not None:
            await self._speak(self._user.language)  # this event's messages too: the person's language
        else:
            await self._speak(best_language(self.router.headers.accept_language))
        return self._user

    async def admin(self, fresh: bool = False) -> SignedInUser | None:
        """The signed-in admin, or None (signed out, or not an admin: the caller shows "Geen toegang"
        or refuses). Writes pass `fresh=True`."""
        user = await self.user(fresh)
        if user is not None and not user.is_admin:
            log.warning("refused admin action for user %s (role %s)", user.id, user.role)
            return None
        return user

    # -- events -------------------------------------------------------------------

    @rx.event
    async def check_session(self):
        """on_load of every page: restore the session from the stored token, checked with PocketBase
        now (a role changed or a password reset since the last page takes effect here). Signed out, the card says
        where the demo accounts are only when the demo tenant exists. Back from the organisation's sign-in page,
        the URL holds a one-time sign-in code (redeemed here, then taken out of the address bar) or why it failed."""
        params = self.router.url.query_parameters
        if CODE_PARAM in params or ERROR_PARAM in params:
            return await self._back_from_provider(str(params.get(CODE_PARAM, "")), str(params.get(ERROR_PARAM, "")))
        if self._error_for_next_page:  # said by the way back from the provider, for the page it lands on
            self._error_for_next_page = False
        else:  # a new page: an earlier attempt's refusal is not this page's (user() says why now)
            self.signin_error = ""
        if await self.user(fresh=True) is None:
            self.demo_hint = await asyncio.to_thread(_demo_exists)
        return None

    async def _back_from_provider(self, code: str, error: str):
        if code:
            try:
                session = await services().sso_signin.redeem(code[:100], _cookie(self.router.headers.cookie, COOKIE))
            except (AuthError, SharedStateUnavailable) as exc:  # the code stays unused; the card says to retry
                log.warning("a sign-in code could not be redeemed: %s", exc)
                session = None
                error = "auth.unreachable"
            if session is not None:
                await self._applied(session)
                self.signin_error = ""
            else:
                self.signin_error = msg(error or "sso.expired")
        else:
            self.signin_error = msg(error) if error in SIGN_IN_ERRORS else msg("sso.failed")
        self.checked = True
        if self._user is None:
            await self.user(fresh=True)
            self.demo_hint = await asyncio.to_thread(_demo_exists)
        url = self.router.url
        query = urlencode([(k, v) for k, v in parse_qsl(url.query) if k not in (CODE_PARAM, ERROR_PARAM)])
        self._error_for_next_page = self.signin_error != ""  # the page the redirect below loads keeps it
        events: list[Any] = [rx.redirect((url.path or "/") + (f"?{query}" if query else ""), replace=True)]
        if self._user is not None and FRAME_PARAM in url.query_parameters:  # opened from an LMS: R42 opens too
            events += [await hook(self, self._user) for hook in ON_FRAMED_LAUNCH]
        return events  # the code goes

    @rx.event
    async def sign_in(self, form: dict):
        """The sign-in card: an e-mail of an organisation that signs in through its own provider goes there (the
        page returns here afterwards); any other gets the password field."""
        self.signin_error = ""
        # this event's messages in the language the card is in (the browser's): an event's language is its own
        await self._speak(best_language(self.router.headers.accept_language))
        # a field that is not on the card (no password for an organisation's own sign-in) comes as None
        email, password = str(form.get("email") or "").strip(), str(form.get("password") or "")
        if email and not password:
            config = await self._sso_of(email)
            if config is not None:
                return rx.call_script(f"window.location.assign({json.dumps(self.sso_href)})")
            self.signin_error = msg("auth.enter_password")
            return rx.set_focus("password")
        try:
            session = await services().auth.sign_in_from(  # the limit is async; PocketBase in a thread
                self.router.session.client_ip, email, password)
        except AuthError as exc:
            log.info("sign-in refused: %s", exc)
            self.signin_error = exc.user_message
            # the password goes, the cursor waits in its field: a retry is typed at once, and each attempt is
            # visibly answered even when the message is the same as the last one
            return [rx.set_value("password", ""), rx.set_focus("password")]
        await self._applied(session)
        self.checked = True
        route = "/" + self.router.page.path.strip("/")
        loader = PAGE_LOADERS.get("/" if route == "/index" else route)
        if loader is None:
            log.warning("no page loader registered for route %r", route)
        return [*AFTER_SIGN_IN, *([loader] if loader else [])]

    async def _sso_of(self, email: str):
        try:
            config = await asyncio.to_thread(services().sso.for_email, email)
        except Exception as exc:  # noqa: BLE001 - PocketBase away: the password field stays, its sign-in says why
            log.warning("could not look up the sign-in of %s's domain: %s", email.rsplit("@", 1)[-1], exc)
            config = None
        if config is None:
            self.sso_name = self.sso_href = ""
            return None
        url = self.router.url
        here = safe_next((url.path or "/") + (f"?{url.query}" if url.query else ""))
        self.sso_name = config.tenant_name or config.tenant_slug
        self.sso_href = "/auth/oidc/start?" + urlencode({"email": email, "next": here})
        return config

    @rx.event
    async def check_email(self, email: str):
        """On leaving the e-mail field: an organisation with its own sign-in page shows "Inloggen met …" instead of
        the password field."""
        email = str(email or "").strip()[:320]
        if "@" not in email:
            self.sso_name = self.sso_href = ""
            return
        try:  # a look-up tells which organisation a domain signs in with: not a way to list them all
            wait = await services().shared.take_token(f"sso-lookup:{self.router.session.client_ip}",
                                                      LOOKUPS_PER_MINUTE / 60.0, LOOKUPS_BURST)
        except SharedStateUnavailable:
            wait = 0.0
        if wait > 0:
            return  # the submit still finds the organisation (it asks again)
        await self._sso_of(email)

    @rx.event
    async def open_in_new_tab(self):
        """In a learning environment's frame (LTI), the same page in a tab of its own, signed in: a one-time sign-in
        code for this session (the frame keeps its session in memory only, when the browser refuses it storage)."""
        if await self.user() is None:
            return None
        try:
            code = await services().sso_signin.code_for(self.session_token)
        except SharedStateUnavailable:
            return rx.toast.error(msg("auth.unreachable"))
        url = self.router.url
        kept = [(k, v) for k, v in parse_qsl(url.query) if k not in (CODE_PARAM, ERROR_PARAM, FRAME_PARAM)]
        target = safe_next((url.path or "/") + (f"?{urlencode(kept)}" if kept else ""))
        target += ("&" if "?" in target else "?") + urlencode({CODE_PARAM: code})
        return rx.call_script(f"window.open({json.dumps(target)}, '_blank', 'noopener')")

    @rx.event
    async def choose_language(self, language: str):
        """The account menu's Nederlands / English: stored on the person (the same as `PATCH /api/me`), so every
        device of theirs speaks it from its next page; this tab at once."""
        user = await self.user(fresh=True)
        chosen = language_of(language)
        if user is None or chosen is None or chosen != language:
            return None
        try:
            await asyncio.to_thread(services().auth.set_language, user.id, chosen)
        except (PBError, AuthError) as exc:
            log.warning("storing the language of user %s failed: %s", user.id, exc)
            return rx.toast.error(msg("me.language_not_stored"))
        self._user = dataclasses.replace(user, language=chosen)
        await self._speak(chosen)
        return rx.toast.success(msg("me.language_set"))

    @rx.event
    async def sign_out(self):
        """"Afmelden": this session's token ends in PocketBase (refused from now on, there and by every worker), and
        this tab forgets the user. Other sessions of the user go on."""
        return await self._sign_out(everywhere=False)

    @rx.event
    async def sign_out_everywhere(self):
        """"Overal afmelden": every session of this user ends (PocketBase gives the user a new token key), on every
        device and in every tab; this one shows the sign-in card with a confirmation."""
        return await self._sign_out(everywhere=True)

    async def _sign_out(self, everywhere: bool) -> list:
        token = self.session_token
        user = await self.user()
        notice = rx.toast.success(msg("auth.signed_out_everywhere")) if everywhere else None
        if user is not None:
            try:
                await services().auth.sign_out_from(token, everywhere)
            except AuthError as exc:
                log.warning("sign-out of user %s not confirmed by PocketBase: %s", user.id, exc)
                if everywhere:  # nothing ended: stay signed in, so the user can try again
                    return [rx.toast.error(msg("auth.sign_out_everywhere_failed"))]
                notice = rx.toast.warning(msg("auth.sign_out_unconfirmed"))
        await self._applied(None)
        await keep_permit(services().shared, self.router.session.client_token, None, 0)  # no more uploads from here
        after = [event for hook in ON_SIGN_OUT for event in await hook(user)]  # a quiz ends, the chat forgets
        return [*after, rx.redirect("/"),
                *([notice] if notice is not None else [])]
