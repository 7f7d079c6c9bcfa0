"""The "Taal van je organisatie" card of /admin/people (issue 52): the language R42 speaks to the organisation's
people who chose none of their own (a person's own choice, in the account menu, goes first). The same code path as
`r42 tenant language`: services/store/tenants.py."""

from __future__ import annotations

import asyncio
import logging

import reflex as rx

from r42_app.container import services
from r42_app.core.errors import UserError
from r42_app.core.messages import DEFAULT_LANGUAGE, LANGUAGE_NAMES, language_of, msg
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin

log = logging.getLogger(__name__)


class TenantLanguageState(AdminPageMixin, rx.State):
    language: str = DEFAULT_LANGUAGE
    saving: bool = False

    async def _refresh(self, user) -> None:
        self.language = await asyncio.to_thread(services().tenants.language, user.tenant_slug)

    @rx.event
    async def choose(self, language: str):
        """Nederlands / English for the organisation: stored at once, said in a toast."""
        user = await self._admin(fresh=True)
        chosen = language_of(language)
        if user is None or chosen is None or chosen == self.language or self.saving:
            return
        self.saving = True
        yield
        try:
            await asyncio.to_thread(services().tenants.set_language, user.tenant_slug, chosen)
        except UserError as exc:
            self.saving = False
            yield rx.toast.error(exc.user_message)
            return
        except PBError as exc:
            log.warning("storing the language of tenant %s failed: %s", user.tenant_slug, exc)
            self.saving = False
            yield rx.toast.error(msg("tenant.language_not_stored"))
            return
        self.language, self.saving = chosen, False
        yield rx.toast.success(msg("tenant.language_set", name=LANGUAGE_NAMES[chosen]))
