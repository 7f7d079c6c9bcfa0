"""Sign-in and session checks against the PocketBase `users` collection."""

from __future__ import annotations

from dataclasses import dataclass

from r42_app.services.kb_store import Tenant
from r42_app.services.pb import PBError, PocketBase

ROLES = ("learner", "admin")


class AuthError(Exception):
    """Sign-in failed; the message is safe to show to the user."""


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

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def tenant(self) -> Tenant:
        """The user's tenant: the only one anything they do may touch."""
        return Tenant(self.tenant_id, self.tenant_slug, self.tenant_name)


@dataclass(frozen=True)
class Session:
    token: str
    user: SignedInUser


def _user_from(record: dict) -> SignedInUser:
    tenant = (record.get("expand") or {}).get("tenant") or {}
    role = record.get("role") if record.get("role") in ROLES else "learner"
    return SignedInUser(
        id=record["id"],
        email=record.get("email", ""),
        name=record.get("name") or record.get("email", "").split("@")[0],
        role=role,
        tenant_id=record.get("tenant", ""),
        tenant_slug=tenant.get("slug", ""),
        tenant_name=tenant.get("name", ""),
    )


class AuthService:
    """Signs users in and verifies their tokens; each call uses a fresh connection (no shared token)."""

    def __init__(self, pb_url: str):
        self.pb_url = pb_url

    def sign_in(self, email: str, password: str) -> Session:
        email = (email or "").strip()
        if not email or not password:
            raise AuthError("Vul je e-mailadres en wachtwoord in.")
        pb = PocketBase(self.pb_url, timeout=10)
        try:
            pb.auth_with_password("users", email, password)
            # auth-refresh with expand gives the record with its tenant in one more round trip.
            data = pb.send("POST", "/api/collections/users/auth-refresh", params={"expand": "tenant"})
        except PBError as exc:
            if exc.status == 0:
                raise AuthError("De server is niet bereikbaar. Probeer het zo opnieuw.") from exc
            raise AuthError("E-mailadres of wachtwoord klopt niet.") from exc
        finally:
            pb.close()
        user = _user_from(data["record"])
        if not user.tenant_id:
            raise AuthError("Dit account hoort bij geen organisatie. Neem contact op met je beheerder.")
        return Session(token=data["token"], user=user)

    def verify(self, token: str) -> Session | None:
        """The session behind a stored token, or None when it is invalid or expired."""
        if not token or len(token) > 4096:
            return None
        pb = PocketBase(self.pb_url, token=token, timeout=10)
        try:
            data = pb.send("POST", "/api/collections/users/auth-refresh", params={"expand": "tenant"})
        except PBError as exc:
            if exc.status == 0:
                raise AuthError("De server is niet bereikbaar. Probeer het zo opnieuw.") from exc
            return None
        finally:
            pb.close()
        return Session(token=data["token"], user=_user_from(data["record"]))
