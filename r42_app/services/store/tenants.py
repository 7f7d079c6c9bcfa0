"""Organisations, as an operator manages them (issue 46; `r42 tenant ...`): create, list, rename, disable and
enable. Nothing here deletes: a disabled tenant keeps its people, knowledge base and history, and PocketBase
refuses its people (users.authRule and pb_hooks/r42_sessions.js) until it is enabled again."""

from __future__ import annotations

from dataclasses import dataclass

from r42_app.core.capabilities import CAPABILITIES, DEFAULT_CAPABILITIES
from r42_app.core.errors import UserError
from r42_app.core.identity import Tenant
from r42_app.core.messages import DEFAULT_LANGUAGE, LANGUAGES, language_of
from r42_app.core.tenants import DEFAULT_CREDITS, STATES, name_problem, slug_problem
from r42_app.services.store.pb import PBError, PocketBase, quote


class TenantError(UserError):
    """A tenant command that cannot be done: `str()` says why in English (the CLI), `user_message` in Dutch."""


@dataclass(frozen=True)
class TenantRow:
    """One line of `r42 tenant list`."""

    id: str
    slug: str
    name: str
    state: str
    people: int
    topics: int
    credits: float
    unlimited: bool
    language: str = DEFAULT_LANGUAGE

    def to_json(self) -> dict:
        return {"slug": self.slug, "name": self.name, "state": self.state, "people": self.people,
                "topics": self.topics, "credits": None if self.unlimited else self.credits,
                "language": self.language}


def _state(row: dict) -> str:
    return "disabled" if row.get("state") == "disabled" else "active"


def _language(row: dict) -> str:
    return language_of(row.get("language")) or DEFAULT_LANGUAGE


class Tenants:
    """The tenants collection, through the app's superuser connection."""

    def __init__(self, pb: PocketBase):
        self.pb = pb

    def _row(self, slug: str) -> dict:
        row = self.pb.first("tenants", f"slug = {quote(slug)}") if isinstance(slug, str) and slug else None
        if row is None:
            known = ", ".join(r["slug"] for r in self.pb.all("tenants", fields="slug", sort="slug"))
            raise TenantError("kb.unknown_tenant", f"unknown tenant {slug!r}; tenants: {known or '(none)'}",
                              slug=str(slug)[:80])
        return row

    def get(self, slug: str) -> Tenant:
        row = self._row(slug)
        return Tenant(row["id"], row["slug"], row["name"])

    def create(self, slug: str, name: str) -> Tenant:
        """A new, active tenant: R42 on with the default capabilities, DEFAULT_CREDITS credits."""
        if problem := slug_problem(slug):
            raise TenantError("kb.bad_tenant", f"invalid tenant slug {slug!r}: {problem}", slug=str(slug)[:80])
        if problem := name_problem(name):
            raise TenantError("tenant.bad_name", f"invalid name: {problem}", reason=problem)
        if self.pb.first("tenants", f"slug = {quote(slug)}") is not None:
            raise TenantError("tenant.exists", f"tenant {slug!r} exists already", slug=slug)
        try:
            row = self.pb.create("tenants", {
                "slug": slug, "name": name.strip(), "state": "active", "chatbot_enabled": True,
                "credits": DEFAULT_CREDITS,
                "chatbot_default_capabilities": [c for c in CAPABILITIES if c in DEFAULT_CAPABILITIES]})
        except PBError as exc:
            if "slug" in exc.field_errors():  # another command created it a moment ago (the unique index)
                raise TenantError("tenant.exists", f"tenant {slug!r} exists already", slug=slug) from exc
            raise
        return Tenant(row["id"], row["slug"], row["name"])

    def list(self) -> list[TenantRow]:
        """Every tenant by slug, with its people and topics counted."""
        out = []
        for row in self.pb.all("tenants", sort="slug"):
            flt = f"tenant = {quote(row['id'])}"
            people = self.pb.list("users", filter=flt, per_page=1, fields="id", total=True)["totalItems"]
            topics = self.pb.list("topics", filter=flt, per_page=1, fields="id", total=True)["totalItems"]
            out.append(TenantRow(row["id"], row["slug"], row["name"], _state(row), int(people), int(topics),
                                 float(row.get("credits") or 0), bool(row.get("credits_unlimited")),
                                 _language(row)))
        return out

    def rename(self, slug: str, name: str) -> tuple[str, str]:
        """Give the tenant a new name; returns (old name, new name)."""
        if problem := name_problem(name):
            raise TenantError("tenant.bad_name", f"invalid name: {problem}", reason=problem)
        row = self._row(slug)
        self.pb.update("tenants", row["id"], {"name": name.strip()})
        return row["name"], name.strip()

    def set_state(self, slug: str, state: str) -> bool:
        """Disable or enable the tenant; False when it was in that state already (nothing written)."""
        if state not in STATES:
            raise TenantError("tenant.bad_state", f"state must be one of {', '.join(STATES)}, not {state!r}")
        row = self._row(slug)
        if _state(row) == state:
            return False
        self.pb.update("tenants", row["id"], {"state": state})
        return True

    def language(self, slug: str) -> str:
        """The organisation's language: what its people see who chose none of their own (issue 52)."""
        return _language(self._row(slug))

    def set_language(self, slug: str, language: str) -> bool:
        """The organisation's language; False when it was that already (nothing written). People who chose a
        language of their own keep it."""
        if not isinstance(language, str) or language not in LANGUAGES:
            raise TenantError("tenant.bad_language", f"language must be one of {', '.join(LANGUAGES)}, "
                              f"not {str(language)[:20]!r}", languages=", ".join(LANGUAGES))
        row = self._row(slug)
        if _language(row) == language:
            return False
        self.pb.update("tenants", row["id"], {"language": language})
        return True
