"""Who and where: the tenant a request belongs to and the user who is signed in (plain values, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tenant:
    """An organisation: everything stored belongs to one, and nobody sees another's."""

    id: str
    slug: str
    name: str


@dataclass(frozen=True)
class SignedInUser:
    """Who is signed in, as PocketBase says (never as the browser says)."""

    id: str
    email: str
    name: str
    role: str
    tenant_id: str
    tenant_slug: str
    tenant_name: str
    tenant_active: bool = True  # False while an operator has disabled the tenant (`r42 tenant disable`, issue 46)
    language: str = "nl"  # the person's own choice, else the tenant's language, else Dutch (issue 52)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def tenant(self) -> Tenant:
        """The user's tenant: the only one anything they do may touch."""
        return Tenant(self.tenant_id, self.tenant_slug, self.tenant_name)
