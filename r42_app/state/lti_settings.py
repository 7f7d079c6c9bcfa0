"""The "Leeromgevingen (LTI)" card of /admin/people (issue 48, part 2): the learning environments (Moodle, Canvas,
Brightspace) that open R42 for this tenant. An admin makes a one-time registration URL for an LMS that registers
itself (dynamic registration), or adds one by hand with what the LMS shows (Canvas); sees them; removes one. The
same code paths as `r42 lti add|list|remove|registration-url`: services/store/lti.py and
services/lti_registration.py."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

import reflex as rx

from r42_app.container import services
from r42_app.core.errors import UserError
from r42_app.core.messages import N_, msg
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin
from r42_app.state.focus import focus_if_lost

log = logging.getLogger(__name__)


@dataclasses.dataclass
class PlatformRow:
    issuer: str = ""
    client_id: str = ""
    deployments: str = ""
    instructors: str = ""  # "beheerder" | "deelnemer"
    key: str = ""  # "issuer\nclient id": what a removal names


class LtiSettingsState(AdminPageMixin, rx.State):
    platforms: list[PlatformRow] = []
    tool_urls: list[tuple[str, str]] = []  # (label, URL) to give an LMS that is set up by hand
    registration_url: str = ""
    registration_until: str = ""
    making: bool = False
    adding: bool = False  # the by-hand form is open
    saving: bool = False
    error: str = ""
    instructor_role: str = "admin"
    confirm_remove: str = ""  # "issuer\nclient id" of the platform asked about ("" when none)

    async def _refresh(self, user) -> None:
        regs = await asyncio.to_thread(services().lti.list, user.tenant)
        self.platforms = [PlatformRow(issuer=r.issuer, client_id=r.client_id, deployments=", ".join(r.deployment_ids),
                                      instructors=N_("beheerder") if r.instructor_role == "admin" else N_("deelnemer"),
                                      key=f"{r.issuer}\n{r.client_id}")
                          for r in regs]
        base = services().settings.link_base.rstrip("/")
        self.tool_urls = [(N_("Login-URL (initiate login)"), f"{base}/lti/login"),
                          (N_("Redirect-URI (launch)"), f"{base}/lti/launch"),
                          (N_("Sleutels (public keyset / JWKS)"), f"{base}/lti/jwks"),
                          (N_("Tool-URL (target link)"), f"{base}/")]

    @rx.event
    async def make_registration_url(self):
        user = await self._admin(fresh=True)
        if user is None:
            return
        self.making = True
        yield
        try:
            made = await asyncio.to_thread(services().lti_registrations.invitation, user.tenant, user.id, user.email)
        except PBError as exc:
            log.error("making a registration URL failed: %s", exc)
            self.making = False
            yield rx.toast.error(msg("people.save_failed"))
            return
        self.making = False
        self.registration_url = made.url
        self.registration_until = time.strftime("%d-%m-%Y %H:%M UTC", time.gmtime(made.expires))
        yield rx.set_focus("lti-registration-url")

    @rx.event
    def open_add(self, open_: bool = True):
        self.adding, self.error = open_, ""

    @rx.event
    def set_instructor_role(self, value: str):
        self.instructor_role = value if value in ("admin", "learner") else "admin"

    @rx.event
    async def add(self, form: dict):
        """Register an LMS by hand (what Canvas shows after its developer key is made)."""
        user = await self._admin(fresh=True)
        if user is None:
            return
        issuer, client_id, deployments, jwks_url, auth_url, token_url = (
            str(form.get(k) or "").strip()[:2000]
            for k in ("issuer", "client_id", "deployment_ids", "jwks_url", "auth_url", "token_url"))
        ids = [d.strip() for d in deployments.replace("\n", ",").split(",") if d.strip()]
        self.saving, self.error = True, ""
        yield
        try:
            await asyncio.to_thread(services().lti.add, user.tenant, user.id, user.email, issuer, client_id, ids,
                                    jwks_url, auth_url, token_url, self.instructor_role)
        except UserError as exc:
            self.saving, self.error = False, exc.user_message
            field = exc.code.removeprefix("lti.").removesuffix("_invalid").replace("_", "-")
            yield rx.set_focus(f"lti-{field}" if field in ("issuer", "client-id", "deployments", "jwks-url",
                                                           "auth-url", "token-url") else "lti-issuer")
            return
        except PBError as exc:
            log.error("adding a learning environment failed: %s", exc)
            self.saving, self.error = False, msg("people.save_failed")
            return
        self.saving, self.adding = False, False
        await self._reload(user, "people.load_failed", show_loading=False)
        yield rx.toast.success(msg("lti.added"))
        yield focus_if_lost("#lti-add-open")  # the dialog closed under the focus (it fell to the page's body)

    @rx.event
    def ask_remove(self, key: str):
        self.confirm_remove = key

    @rx.event
    def keep(self, open_: bool = False):
        if not open_:
            self.confirm_remove = ""

    @rx.event
    async def remove(self):
        user = await self._admin(fresh=True)
        issuer, _, client_id = self.confirm_remove.partition("\n")
        self.confirm_remove = ""
        if user is None or not issuer:
            return
        try:
            await asyncio.to_thread(services().lti.remove, user.tenant, user.id, user.email, issuer, client_id)
        except PBError as exc:
            log.error("removing a learning environment failed: %s", exc)
            yield rx.toast.error(msg("people.save_failed"))
            return
        await self._reload(user, "people.load_failed", show_loading=False)
        yield rx.toast.success(msg("lti.removed"))
        yield focus_if_lost("#lti-add-open")  # its card, and the button that opened this, are gone
