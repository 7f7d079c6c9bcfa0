"""AccountState: a person's own account (issue 46). The pages a link from a mail or an admin opens (`/welkom` to
accept an invitation, `/nieuw-wachtwoord` to reset a password), "Wachtwoord vergeten?" (`/wachtwoord-vergeten`)
and "Wachtwoord wijzigen" in the account menu. Thin: the rules are in core/people.py, the work in
services/store/people.py (PocketBase in a thread)."""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import urlencode

import reflex as rx

from r42_app.container import services
from r42_app.core.messages import msg
from r42_app.core.people import password_problem
from r42_app.core.ratelimit import FailureLimiter
from r42_app.services.store.auth import AuthError
from r42_app.services.store.pb import PBError
from r42_app.services.store.people import PeopleError
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)

# "Wachtwoord vergeten?" per browser address: a few a minute (the answer is the same whether the address is known)
RESETS_PER_MINUTE = 3
_RESETS = FailureLimiter(RESETS_PER_MINUTE, 60.0)


class AccountState(rx.State):
    # the link pages
    link_kind: str = ""  # invite | reset, once the link is known to work
    link_email: str = ""
    link_name: str = ""
    link_tenant: str = ""
    link_error: str = ""
    link_checking: bool = True
    link_sso_href: str = ""  # passwords are off for this person's domain: their organisation's sign-in instead
    saving: bool = False
    form_error: str = ""
    _token: str = ""
    # "Wachtwoord vergeten?"
    forgot_sent: bool = False
    forgot_error: str = ""
    forgot_ready: bool = False  # the page's load has run (its reset cannot wipe an answer any more)
    forgot_no_mail_said: bool = False  # the answer is the no-mail note itself (so the page does not show it twice)
    forgot_mail_on: bool = True  # R42 sends mail here: else the page says whom to ask instead of asking an address
    # "Wachtwoord wijzigen"
    change_open: bool = False
    change_error: str = ""

    async def _speak(self) -> None:
        """This event's messages in the reader's language: the person's, before sign-in the browser's (an event's
        language is its own: without this, an English visitor's refusals came in Dutch)."""
        await (await self.get_state(AuthState)).user()

    # -- the link pages -------------------------------------------------------------------------

    @rx.event
    async def load_link(self):
        """on_load of `/welkom` and `/nieuw-wachtwoord`: what the link in the address is for, or why it no longer
        works (nothing is used up by looking)."""
        self.link_checking, self.link_error, self.form_error, self.link_kind = True, "", "", ""
        await self._speak()
        self._token = str(self.router.page.params.get("token", ""))[:200]
        yield
        try:
            seen = await asyncio.to_thread(services().people.peek, self._token)
        except PeopleError as exc:
            self.link_error = exc.user_message
        except PBError as exc:
            log.error("could not check a link: %s", exc)
            self.link_error = msg("auth.unreachable")
        else:
            self.link_kind, self.link_email, self.link_name, self.link_tenant = (
                seen.kind, seen.email, seen.name, seen.tenant_name)
            self.link_sso_href = await self._sso_href(seen.email)
        self.link_checking = False

    @rx.event
    def start_sso(self):
        """"Inloggen met …": to the organisation's sign-in (a page load of ours that sends the browser there)."""
        if self.link_sso_href.startswith("/auth/oidc/start?"):
            return rx.call_script(f"window.location.assign({json.dumps(self.link_sso_href)})")
        return None

    @staticmethod
    async def _sso_href(email: str) -> str:
        """Where a person whose organisation switched passwords off signs in instead ("" when a password works)."""
        try:
            allowed = await asyncio.to_thread(services().sso.passwords_allowed, email)
        except PBError as exc:
            log.warning("could not tell whether %s's domain signs in with passwords: %s", email.rsplit("@")[-1], exc)
            return ""
        return "" if allowed else "/auth/oidc/start?" + urlencode({"email": email, "next": "/"})

    @rx.event
    async def redeem(self, form: dict):
        """"Wachtwoord opslaan": the link is used, the password set, and the person signed in on this tab."""
        password, again = str(form.get("password", "")), str(form.get("password_again", ""))
        self.form_error = ""
        await self._speak()
        if self.link_sso_href:  # no password for this domain: the link page shows the organisation's sign-in
            self.form_error = msg("auth.sso_only")
            return
        if password != again:
            self.form_error = msg("people.passwords_differ")
            return
        if problem := password_problem(password, self.link_email, self.link_name):
            self.form_error = msg(problem.code, **problem.fields)
            return
        self.saving = True
        yield
        try:
            email = await asyncio.to_thread(services().people.redeem, self._token, password)
            session = await asyncio.to_thread(services().auth.sign_in, email, password)
        except PeopleError as exc:
            self.saving = False
            if exc.kind == "bad_input":
                self.form_error = exc.user_message
            else:  # used, withdrawn or expired meanwhile
                self.link_error, self.link_kind = exc.user_message, ""
            return
        except (AuthError, PBError) as exc:
            log.error("a link was used but the sign-in after it failed: %s", exc)
            self.saving = False
            self.form_error = msg("people.saved_sign_in_failed")
            return
        auth = await self.get_state(AuthState)
        await auth._applied(session)
        auth.checked = True
        self.saving = False
        self._token = ""
        yield rx.redirect("/")
        yield rx.toast.success(msg("people.welcome_done") if self.link_kind == "invite" else msg("people.reset_done"))

    # -- "Wachtwoord vergeten?" ------------------------------------------------------------------

    @rx.event
    async def request_reset(self, form: dict):
        """The same answer whether the address is known or not; a few requests a minute per browser address."""
        self.forgot_error, self.forgot_no_mail_said = "", False
        await self._speak()
        if _RESETS.take(self.router.session.client_ip or "?") > 0:
            self.forgot_error = msg("auth.too_many_attempts")
            return
        email = str(form.get("email", ""))[:300]
        if email and await self._sso_href(email):  # no password to reset: the sign-in card says where instead
            self.forgot_error = msg("auth.sso_only")
            return
        if not services().settings.mail_on:
            self.forgot_error, self.forgot_no_mail_said = msg("people.reset_needs_mail"), True
            return
        try:
            await asyncio.to_thread(services().people.request_reset, email)
        except PBError as exc:
            log.error("a reset request failed: %s", exc)
            self.forgot_error = msg("auth.unreachable")
            return
        self.forgot_sent = True

    @rx.event
    def load_forgot(self):
        self.forgot_sent, self.forgot_error, self.forgot_ready, self.forgot_no_mail_said = False, "", True, False
        self.forgot_mail_on = services().settings.mail_on  # a setting read once at start: no I/O

    @rx.event
    def leave_forgot(self):
        self.forgot_ready = False  # the next visit shows its form after its own load

    # -- "Wachtwoord wijzigen" ---------------------------------------------------------------------

    @rx.event
    def open_change(self, open_: bool = True):
        self.change_open, self.change_error = open_, ""

    @rx.event
    async def change_password(self, form: dict):
        """The old password first; the new one follows the one rule; every other session of the person ends
        (PocketBase gives them a new token key) and this tab gets a new one."""
        auth = await self.get_state(AuthState)
        user = await auth.user(fresh=True)
        if user is None:
            self.change_open = False
            return
        old, new, again = (str(form.get(k, "")) for k in ("old_password", "new_password", "new_password_again"))
        self.change_error = ""
        # a refusal keeps what was typed (the form emptied every field, the current password too) and puts the
        # keyboard on the field to mend
        if new != again:
            self.change_error = msg("people.passwords_differ")
            yield [rx.set_value("change-new-again", ""), rx.set_focus("change-new-again")]
            return
        if problem := password_problem(new, user.email, user.name):
            self.change_error = msg(problem.code, **problem.fields)
            yield rx.set_focus("change-new-password")
            return
        self.saving = True
        yield
        try:
            await services().auth.sign_in_from(self.router.session.client_ip, user.email, old)
        except AuthError as exc:
            self.saving = False
            self.change_error = msg("people.old_password_wrong") if exc.code == "auth.wrong_password" \
                else exc.user_message
            if exc.code == "auth.wrong_password":
                yield [rx.set_value("old-password", ""), rx.set_focus("old-password")]
            return
        try:
            await asyncio.to_thread(services().people.set_password, user.id, user.email, user.name, new)
            await services().auth.sessions_ended(user.id)
            session = await asyncio.to_thread(services().auth.sign_in, user.email, new)
        except (AuthError, PBError) as exc:
            log.error("password change of %s failed: %s", user.id, exc)
            self.saving = False
            self.change_error = msg("people.change_failed")
            return
        await auth._applied(session)
        self.saving = False
        self.change_open = False
        yield rx.toast.success(msg("people.changed"))
