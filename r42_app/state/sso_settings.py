"""The "Inloggen met je organisatie" card of /admin/people (issue 48): an admin connects the tenant's identity
provider (OIDC). The same code path as `r42 sso set|off`: services/store/sso.py, after services/sso_signin.py has
read the provider's discovery document (so a typo in the issuer is said at once, not at the first sign-in)."""

from __future__ import annotations

import asyncio
import logging

import reflex as rx

from r42_app.container import services
from r42_app.core.errors import UserError
from r42_app.core.messages import msg
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin

log = logging.getLogger(__name__)


class SsoSettingsState(AdminPageMixin, rx.State):
    connected: bool = False
    issuer: str = ""
    client_id: str = ""
    domains: str = ""  # "a.nl, b.nl"
    admin_group: str = ""
    passwords: bool = True
    redirect_uri: str = ""
    editing: bool = False  # the form is open (always when not connected yet)
    saving: bool = False
    error: str = ""
    confirm_off: bool = False

    async def _refresh(self, user) -> None:
        config = await asyncio.to_thread(services().sso.get, user.tenant)
        self.redirect_uri = services().settings.link_base.rstrip("/") + "/auth/oidc/callback"
        self.connected = config is not None
        if config is not None:
            self.issuer, self.client_id = config.issuer, config.client_id
            self.domains, self.admin_group, self.passwords = ", ".join(config.domains), config.admin_group, \
                config.passwords
        self.editing = False

    @rx.event
    def edit(self, open_: bool = True):
        self.editing, self.error = open_, ""

    @rx.event
    def set_passwords(self, value: bool):
        self.passwords = bool(value)

    @rx.event
    async def save(self, form: dict):
        """Check the provider's discovery, then store the settings (the secret only when one was typed)."""
        user = await self._admin(fresh=True)
        if user is None:
            return
        issuer, client_id, domains, group = (str(form.get(k) or "").strip()[:2000] for k in
                                             ("issuer", "client_id", "domains", "admin_group"))
        secret = str(form.get("client_secret") or "").strip() or None
        self.passwords = form.get("passwords") in (True, "on", "true")  # a switch sends "on", or nothing when off
        self.saving, self.error = True, ""
        yield
        try:
            await services().sso_signin.check_provider(issuer)
            await asyncio.to_thread(services().sso.set, user.tenant, user.id, user.email, issuer, client_id, secret,
                                    domains, group, self.passwords)
        except UserError as exc:
            self.saving, self.error = False, exc.user_message
            if exc.code == "sso.unreachable":  # (the learners' "try again in a moment": an admin needs the address)
                url = (issuer.rstrip("/") + "/.well-known/openid-configuration")[:300]
                problem, named = exc.fields.get("problem"), exc.fields.get("named") or ""
                self.error = msg("sso.issuer_other" if problem == "issuer" else
                                 "sso.endpoints_unusable" if problem == "endpoints" else "sso.issuer_unreachable",
                                 url=url, named=f"{named}"[:200])
            yield rx.set_focus("sso-issuer" if exc.code.startswith(("sso.issuer", "sso.unreachable")) else
                               "sso-domains" if exc.code.startswith("sso.domain") else
                               "sso-secret" if exc.code.startswith("sso.secret") else "sso-client-id")
            return
        except PBError as exc:
            log.error("saving the sign-in settings failed: %s", exc)
            self.saving, self.error = False, msg("people.save_failed")
            return
        self.saving = False
        await self._reload(user, "people.load_failed", show_loading=False)
        yield rx.toast.success(msg("sso.saved"))

    @rx.event
    def ask_off(self, open_: bool = True):
        self.confirm_off = open_

    @rx.event
    async def switch_off(self):
        user = await self._admin(fresh=True)
        self.confirm_off = False
        if user is None:
            return
        try:
            await asyncio.to_thread(services().sso.off, user.tenant, user.id, user.email)
        except PBError as exc:
            log.error("switching the sign-in settings off failed: %s", exc)
            yield rx.toast.error(msg("people.save_failed"))
            return
        self.issuer = self.client_id = self.domains = self.admin_group = ""
        self.passwords = True
        await self._reload(user, "people.load_failed", show_loading=False)
        self.editing = True
        yield rx.toast.success(msg("sso.switched_off"))
