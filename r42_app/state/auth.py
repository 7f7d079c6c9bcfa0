"""AuthState: who is signed in, decided on the server from a PocketBase token."""

from __future__ import annotations

import logging
from typing import Any, Callable

import reflex as rx

from r42_app.services import deps
from r42_app.services.auth import AuthError, Session, SignedInUser

log = logging.getLogger(__name__)

# Route pattern -> the event that loads that page's data; sign-in runs it so the page fills in place.
PAGE_LOADERS: dict[str, Callable[[], Any]] = {}


def page_loader(route: str, handler: Any) -> Any:
    """Register `handler` as the loader of `route` (called by the page modules)."""
    PAGE_LOADERS[route] = handler
    return handler


class NotAllowed(Exception):
    """An event handler was called by someone who may not use it."""


class AuthState(rx.State):
    """The signed-in user. Only server code sets these vars (there are no client setters)."""

    session_token: str = rx.LocalStorage("", name="r42.session", sync=True)
    checked: bool = False
    signing_in: bool = False
    signin_error: str = ""
    user_id: str = ""
    user_name: str = ""
    user_email: str = ""
    role: str = ""
    tenant_name: str = ""
    _user: SignedInUser | None = None

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

    def _apply(self, session: Session | None) -> None:
        if session is None:
            self._user = None
            self.user_id = self.user_name = self.user_email = self.role = self.tenant_name = ""
            self.session_token = ""
            return
        user = session.user
        self._user = user
        self.session_token = session.token
        self.user_id = user.id
        self.user_name = user.name
        self.user_email = user.email
        self.role = user.role
        self.tenant_name = user.tenant_name

    def current_user(self) -> SignedInUser | None:
        """The verified user, checking the stored token with PocketBase the first time."""
        if self._user is None and self.session_token:
            try:
                self._apply(deps.auth_service().verify(self.session_token))
            except AuthError as exc:
                log.warning("session check failed: %s", exc)
        self.checked = True
        return self._user

    def require_user(self) -> SignedInUser:
        user = self.current_user()
        if user is None:
            raise NotAllowed("Je bent niet aangemeld.")
        return user

    def require_admin(self) -> SignedInUser:
        """The signed-in admin, or NotAllowed: every admin handler starts here."""
        user = self.require_user()
        if not user.is_admin:
            log.warning("refused admin action for user %s (role %s)", user.id, user.role)
            raise NotAllowed("Alleen beheerders mogen dit doen.")
        return user

    def admin_or_none(self) -> SignedInUser | None:
        """The signed-in admin, or None (signed out, or not an admin: the caller shows "Geen toegang")."""
        if self.current_user() is None:
            return None
        try:
            return self.require_admin()
        except NotAllowed:
            return None

    # -- events -------------------------------------------------------------------

    @rx.event
    def check_session(self):
        """on_load of every page: restore the session from the stored token."""
        self.current_user()

    @rx.event
    def sign_in(self, form: dict):
        self.signin_error = ""
        try:
            session = deps.auth_service().sign_in(str(form.get("email", "")), str(form.get("password", "")))
        except AuthError as exc:
            self.signin_error = str(exc)
            return
        self._apply(session)
        self.checked = True
        route = "/" + self.router.page.path.strip("/")
        loader = PAGE_LOADERS.get("/" if route == "/index" else route)
        if loader is None:
            log.warning("no page loader registered for route %r", route)
        return loader

    @rx.event
    def sign_out(self):
        from r42_app.state.chat import ChatState  # the chat window forgets this user too
        from r42_app.state.quiz import end_quiz  # and a running quiz ends

        user = self.current_user()
        self._apply(None)
        return [*(end_quiz(user) if user else []), ChatState.forget, rx.redirect("/")]
