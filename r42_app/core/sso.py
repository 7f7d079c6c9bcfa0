"""Single sign-on with an organisation's identity provider (OIDC), the pure part: what a tenant's settings may be,
which e-mail domain belongs to which tenant, what a verified ID token's claims make of a person, and where the
browser may be sent back to.

The protocol (discovery, PKCE, the ID token's signature and claims) is services/adapters/oidc.py; the people and
the tenant's settings are services/store/sso.py. docs/DESIGN.md "Single sign-on" has the whole route.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from r42_app.core.errors import UserError

MAX_DOMAINS = 50
MAX_NEXT = 500  # characters of a path to return to after the round trip
MAX_GROUP = 200
MAX_CLIENT_ID = 255
MAX_SECRET = 2000
_DOMAIN = re.compile(r"^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$")
# PocketBase ids and slugs are ASCII; a path to return to is one of the app's own pages
_NEXT = re.compile(r"^/[A-Za-z0-9/_\-.~%]*(\?[A-Za-z0-9_\-.~%=&+]*)?$")


class SsoError(UserError):
    """A sign-in through the organisation's provider refused, or settings refused; the code says why in Dutch."""


@dataclass(frozen=True)
class SsoConfig:
    """One tenant's identity provider. The client secret is not here: it is written, never read back to a person."""

    tenant_id: str
    tenant_slug: str
    tenant_name: str
    issuer: str
    client_id: str
    domains: tuple[str, ...]
    admin_group: str = ""
    passwords: bool = True  # people of these domains may still sign in with a password

    def to_json(self) -> dict:
        """What `r42 sso show` prints and the admin page shows (no secret)."""
        return {"tenant": self.tenant_slug, "issuer": self.issuer, "client_id": self.client_id,
                "domains": list(self.domains), "admin_group": self.admin_group, "passwords": self.passwords}


@dataclass(frozen=True)
class Person:
    """Who a verified ID token says signs in: matched by (issuer, subject), created by e-mail the first time."""

    issuer: str
    subject: str
    email: str
    name: str
    admin: bool  # a member of the tenant's admin group (False when it has none)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def issuer_problem(issuer: object, loopback_ok: bool = True) -> str:
    """Why `issuer` cannot be a provider's issuer ("" when it can): an https URL without query or fragment; http
    only on this machine's loopback, for a provider run beside the app, and only when `loopback_ok` (an app served
    on loopback itself: development and the tests)."""
    if not isinstance(issuer, str) or not issuer.strip():
        return "sso.issuer_invalid"
    parts = urlsplit(issuer.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        return "sso.issuer_invalid"
    if parts.scheme == "http" and not (loopback_ok and is_loopback(parts.hostname)):
        return "sso.issuer_https"
    if len(issuer) > 500 or parts.username or parts.password:
        return "sso.issuer_invalid"
    return ""


def parse_domains(text: object) -> tuple[str, ...]:
    """`a.nl,b.nl` (or a list) as lowercase domains without repeats, in order; SsoError when one is not a domain."""
    items = text.split(",") if isinstance(text, str) else text if isinstance(text, (list, tuple)) else None
    if items is None:
        raise SsoError("sso.domains_missing", "domains must be a comma-separated list")
    found: list[str] = []
    for item in items:
        domain = str(item).strip().lower().lstrip("@")
        if not domain:
            continue
        try:
            domain = domain.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise SsoError("sso.domains_invalid", f"not a domain: {domain!r}", domain=domain) from exc
        if not _DOMAIN.match(domain):
            raise SsoError("sso.domains_invalid", f"not a domain: {domain!r}", domain=domain)
        if domain not in found:
            found.append(domain)
    if not found:
        raise SsoError("sso.domains_missing", "at least one e-mail domain is needed")
    if len(found) > MAX_DOMAINS:
        raise SsoError("sso.domains_too_many", f"at most {MAX_DOMAINS} domains", most=MAX_DOMAINS)
    return tuple(found)


def domain_of(email: object) -> str:
    """The domain of an e-mail address, lowercase ("" when it is not one)."""
    if not isinstance(email, str) or email.count("@") != 1:
        return ""
    local, domain = email.strip().lower().split("@")
    if not local or not _DOMAIN.match(domain):
        return ""
    return domain


def settings_problem(client_id: object, secret: object, admin_group: object) -> str:
    """The catalogue code of what is wrong with the client's settings ("" when they are fine)."""
    if not isinstance(client_id, str) or not client_id.strip() or len(client_id) > MAX_CLIENT_ID:
        return "sso.client_id_invalid"
    if not isinstance(secret, str) or not secret.strip() or len(secret) > MAX_SECRET or "\n" in secret.strip():
        return "sso.secret_invalid"
    if not isinstance(admin_group, str) or len(admin_group) > MAX_GROUP:
        return "sso.group_invalid"
    return ""


def person_from(claims: dict[str, Any], config: SsoConfig) -> Person:
    """What the checked ID token's claims make of the person, or SsoError saying why they may not sign in: the
    e-mail must be verified by the provider (`email_verified` true) and in one of the tenant's domains."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject or len(subject) > 255:
        raise SsoError("sso.token_invalid", "the ID token has no usable sub")
    email = claims.get("email")
    domain = domain_of(email)
    if not domain:
        raise SsoError("sso.no_email", "the ID token has no e-mail address")
    if domain not in config.domains:
        raise SsoError("sso.domain_not_allowed", f"{domain} is not a domain of tenant {config.tenant_slug}",
                       domain=domain)
    # absent counts as not verified, "true" as text too. Entra ID does not send email_verified; its optional claim
    # xms_edov ("e-mail domain owner verified") says the same, and is accepted in its place
    if claims.get("email_verified") is not True and claims.get("xms_edov") is not True:
        raise SsoError("sso.email_unverified", f"the provider has not verified {email}")
    name = claims.get("name")
    if not isinstance(name, str) or not name.strip():
        given, family = claims.get("given_name"), claims.get("family_name")
        name = " ".join(p for p in (given, family) if isinstance(p, str) and p.strip())
    groups = claims.get("groups")
    admin = bool(config.admin_group) and isinstance(groups, list) and config.admin_group in groups
    return Person(issuer=config.issuer, subject=subject, email=str(email).strip().lower(),
                  name=" ".join(str(name or "").split())[:200], admin=admin)


def safe_next(path: object) -> str:
    """Where the browser may go back to after the round trip: one of this app's own paths ("/" otherwise), never
    another site (`//evil.example`, `https://…`, `/\\evil`), so the sign-in cannot be an open redirect."""
    if not isinstance(path, str) or not path or len(path) > MAX_NEXT:
        return "/"
    if path.startswith("//") or "\\" in path or not _NEXT.match(path):
        return "/"
    return path


def pkce_challenge(verifier: str) -> str:
    """RFC 7636's S256 code challenge of `verifier`."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def binding(value: str) -> str:
    """What is stored of the browser's binding cookie (its SHA-256): a round trip finishes only in the browser that
    started it, so a link with someone else's code or sign-in cannot sign this browser in as them."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()
