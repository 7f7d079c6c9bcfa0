"""What every admin page's state has: the admin check, "geen toegang" for a signed-in learner, and loading
with a Dutch error when PocketBase does not answer. The page states take it in as a mixin."""

from __future__ import annotations

import logging

import reflex as rx

from r42_app.core.messages import msg
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)


class AdminPageMixin(rx.State, mixin=True):
    forbidden: bool = False  # signed in, but not an admin (of this tenant): the page says so
    loading: bool = True
    load_error: str = ""

    async def _admin(self, fresh: bool = False):
        """The signed-in admin, or None. `fresh`: the role as PocketBase says now (before a write)."""
        auth = await self.get_state(AuthState)
        user = await auth.admin(fresh)
        self.forbidden = user is None and auth.user_id != ""
        if self.forbidden:
            self.loading = False
        return user

    async def _refresh(self, user) -> None:
        """Read what the page shows (each page its own)."""
        raise NotImplementedError

    async def _reload(self, user, failed: str, show_loading: bool = True) -> None:
        """_refresh, with the page's loading state, and the catalogue message `failed` when it cannot read."""
        if show_loading:
            self.loading = True
        self.load_error = ""
        try:
            await self._refresh(user)
        except PBError as exc:
            log.error("%s could not load: %s", type(self).__name__, exc)
            self.load_error = msg(failed)
        self.loading = False
