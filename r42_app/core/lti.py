"""LTI 1.3 (issue 48, part 2), the pure part: what a platform registration may be, and what a launch's checked
ID token says: its message type and version, its deployment, where it wants to land, who the person is and which
role they get. The signature, `iss`, `aud`, `exp` and `nonce` are checked before this (services/adapters/oidc.py,
joserfc); docs/DESIGN.md "Next: the LTI 1.3 tool" has the whole route.

IMS names: https://www.imsglobal.org/spec/lti/v1p3 (core), /lti-dl/v2p0 (deep linking).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from r42_app.core.errors import UserError
from r42_app.core.sso import is_loopback, safe_next

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/"
VERSION = "1.3.0"
RESOURCE_LINK = "LtiResourceLinkRequest"
DEEP_LINKING = "LtiDeepLinkingRequest"
DEEP_LINKING_RESPONSE = "LtiDeepLinkingResponse"
FRAME_PARAM = "r42_frame"  # a launched page's permission to be framed by its platform (signed: frame_grant)
FRAME_S = 8 * 3600  # how long that permission lasts (a reload of the framed page within a working day)
MAX_FRAME_ORIGINS = 6
MESSAGE_TYPES = (RESOURCE_LINK, DEEP_LINKING)
MAX_DEPLOYMENTS = 20
MAX_ID = 255

# LIS roles (context roles, and the institution/system ones some platforms send instead)
_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/"
INSTRUCTOR_ROLES = frozenset({
    _ROLE + "membership#Instructor", _ROLE + "membership#Administrator", _ROLE + "membership#ContentDeveloper",
    _ROLE + "institution/person#Administrator", _ROLE + "institution/person#Instructor",
    _ROLE + "institution/person#Faculty", _ROLE + "system/person#Administrator",
    _ROLE + "system/person#SysAdmin",
    "Instructor", "Administrator",  # the short forms the specification allows for context roles
})


class LtiError(UserError):
    """A launch or a registration refused; the code says why in Dutch (`lti.*`)."""


@dataclass(frozen=True)
class Registration:
    """One LMS registered to a tenant."""

    tenant_id: str
    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    jwks_url: str
    auth_url: str
    token_url: str = ""
    instructor_role: str = "admin"  # what an Instructor or Administrator of the LMS becomes here (admin | learner)


@dataclass(frozen=True)
class Launch:
    """What a checked launch asks for."""

    message_type: str
    deployment_id: str
    subject: str
    email: str
    name: str
    role: str  # learner | admin
    target: str  # one of this app's paths ("/", "/topics/<slug>")
    locale: str  # the LMS's locale for the person ("" when it sends none)
    resource_link: str  # the resource link's id ("" for deep linking)
    return_url: str  # deep linking: where the response goes back to ("" otherwise)
    return_data: str  # deep linking: `data` to send back unchanged
    frame_origins: tuple[str, ...] = field(default=())  # who may frame the pages this launch opens


def origin_of(url: object) -> str:
    """scheme://host[:port] of an http(s) URL, "" for anything else."""
    if not isinstance(url, str):
        return ""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return ""
    return f"{parts.scheme}://{parts.netloc.lower()}"


def frame_origins(reg: Registration, claims: dict[str, Any]) -> tuple[str, ...]:
    """The origins that may frame what a launch opens: the platform's own (its issuer and authentication URL) and
    the pages the signed launch says it comes from (launch_presentation.return_url, the deep-linking return URL:
    Canvas's issuer is canvas.instructure.com while its pages are on the school's own host)."""
    presentation = claims.get(CLAIM + "launch_presentation")
    settings = claims.get(DL_CLAIM + "deep_linking_settings")
    named = [reg.issuer, reg.auth_url,
             presentation.get("return_url") if isinstance(presentation, dict) else None,
             settings.get("deep_link_return_url") if isinstance(settings, dict) else None]
    found = [o for o in (origin_of(u) for u in named) if o]
    return tuple(dict.fromkeys(found))[:MAX_FRAME_ORIGINS]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def frame_grant(origins: tuple[str, ...], key: bytes, now: float) -> str:
    """A permission, signed with the app's frame key, for these origins to frame the page it is attached to
    (`?r42_frame=`); the security headers read it back with `framing_origins`. Signed, so that nobody can make a
    page of R42 frameable by an origin of their own (clickjacking) by editing the URL."""
    body = _b64(json.dumps({"o": list(origins), "e": int(now + FRAME_S)}, separators=(",", ":")).encode())
    return body + "." + _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())


def framing_origins(grant: object, key: bytes, now: float) -> tuple[str, ...]:
    """The origins a grant lets frame a page; () for a missing, forged, expired or malformed one."""
    if not isinstance(grant, str) or len(grant) > 2000 or grant.count(".") != 1:
        return ()
    body, sig = grant.split(".")
    if not hmac.compare_digest(sig, _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())):
        return ()
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError:
        return ()
    if not isinstance(data, dict) or not isinstance(data.get("e"), int) or data["e"] < now:
        return ()
    origins = data.get("o")
    if not isinstance(origins, list):
        return ()
    return tuple(o for o in origins if isinstance(o, str) and origin_of(o) == o)[:MAX_FRAME_ORIGINS]


def deep_link_response(reg: Registration, deployment_id: str, data: str, title: str, url: str, now: float,
                       nonce: str) -> dict[str, Any]:
    """The claims of the deep-linking response (IMS Deep Linking 2.0, 4.2): one LTI resource link to `url`, from
    the tool (iss = our client id) to the platform (aud = its issuer), with the request's `data` echoed."""
    claims: dict[str, Any] = {
        "iss": reg.client_id, "aud": reg.issuer, "azp": reg.client_id, "iat": int(now), "exp": int(now) + 300,
        "nonce": nonce, CLAIM + "deployment_id": deployment_id, CLAIM + "message_type": DEEP_LINKING_RESPONSE,
        CLAIM + "version": VERSION,
        DL_CLAIM + "content_items": [{"type": "ltiResourceLink", "title": title[:200], "url": url}],
    }
    if data:
        claims[DL_CLAIM + "data"] = data
    return claims


def url_problem(url: object, what: str, loopback_ok: bool = False) -> str:
    """Why `url` cannot be a platform's endpoint ("" when it can): https, or http on loopback when allowed."""
    if not isinstance(url, str) or not url.strip() or len(url) > 1000:
        return f"lti.{what}_invalid"
    parts = urlsplit(url.strip())
    if not parts.hostname or parts.username or parts.password:
        return f"lti.{what}_invalid"
    if parts.scheme == "https" or (parts.scheme == "http" and loopback_ok and is_loopback(parts.hostname)):
        return ""
    return f"lti.{what}_invalid"


def registration(tenant_id: str, issuer: object, client_id: object, deployment_ids: object, jwks_url: object,
                 auth_url: object, token_url: object = "", instructor_role: object = "admin",
                 loopback_ok: bool = False) -> Registration:
    """A registration from what an admin or operator typed, or LtiError naming the first thing wrong."""
    for value, what in ((issuer, "issuer"), (jwks_url, "jwks_url"), (auth_url, "auth_url")):
        problem = url_problem(value, what, loopback_ok)
        if problem:
            raise LtiError(problem, f"{what}: not a usable URL: {str(value)[:100]!r}")
    if token_url and url_problem(token_url, "token_url", loopback_ok):
        raise LtiError("lti.token_url_invalid", f"token_url: not a usable URL: {str(token_url)[:100]!r}")
    if not isinstance(client_id, str) or not client_id.strip() or len(client_id) > MAX_ID:
        raise LtiError("lti.client_id_invalid", "the client id is empty or too long")
    ids = deployment_ids if isinstance(deployment_ids, (list, tuple)) else None
    cleaned = tuple(dict.fromkeys(str(d).strip() for d in ids or () if isinstance(d, str) and str(d).strip()))
    if not cleaned or len(cleaned) > MAX_DEPLOYMENTS or any(len(d) > MAX_ID for d in cleaned):
        raise LtiError("lti.deployments_invalid", f"1 to {MAX_DEPLOYMENTS} deployment ids are needed")
    if instructor_role not in ("admin", "learner"):
        raise LtiError("lti.role_invalid", "the instructor role is admin or learner")
    return Registration(tenant_id=tenant_id, issuer=str(issuer).strip(), client_id=client_id.strip(),
                        deployment_ids=cleaned, jwks_url=str(jwks_url).strip(), auth_url=str(auth_url).strip(),
                        token_url=str(token_url or "").strip(), instructor_role=str(instructor_role))


def role_of(roles: object, instructor_role: str) -> str:
    """An LMS's roles as an R42 role: Instructor or Administrator (context, institution or system) gets the
    registration's `instructor_role`; everyone else (Learner, Mentor, TeachingAssistant, none) is a learner."""
    if isinstance(roles, list) and any(isinstance(r, str) and r in INSTRUCTOR_ROLES for r in roles):
        return instructor_role if instructor_role in ("admin", "learner") else "learner"
    return "learner"


def _text(claims: dict[str, Any], name: str, limit: int = 320) -> str:
    value = claims.get(name)
    return " ".join(value.split())[:limit] if isinstance(value, str) else ""


def target_path(target_link_uri: object, own_origins: tuple[str, ...]) -> str:
    """The app path a launch lands on: `target_link_uri` must be one of this app's URLs (any page: `/`,
    `/topics/<slug>`); anything else lands on "/"."""
    if not isinstance(target_link_uri, str):
        return "/"
    parts = urlsplit(target_link_uri)
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin.rstrip("/") not in {o.rstrip("/") for o in own_origins}:
        return "/"
    path = parts.path or "/"
    if path.startswith("/lti/"):  # the tool's own endpoints are not pages
        return "/"
    return safe_next(path + (f"?{parts.query}" if parts.query else ""))


def launch_of(claims: dict[str, Any], reg: Registration, own_origins: tuple[str, ...]) -> Launch:
    """What a launch whose signature and standard claims held asks for, or LtiError: the message type and version,
    a deployment this registration knows, a subject, and for a resource link its id, for deep linking its return
    URL."""
    kind = claims.get(CLAIM + "message_type")
    if kind not in MESSAGE_TYPES:
        raise LtiError("lti.message_type", f"unsupported message type {str(kind)[:60]!r}")
    if claims.get(CLAIM + "version") != VERSION:
        raise LtiError("lti.version", f"unsupported LTI version {str(claims.get(CLAIM + 'version'))[:20]!r}")
    deployment = claims.get(CLAIM + "deployment_id")
    if not isinstance(deployment, str) or deployment not in reg.deployment_ids:
        raise LtiError("lti.unknown_deployment", f"deployment {str(deployment)[:80]!r} is not registered")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject or len(subject) > MAX_ID:
        raise LtiError("lti.no_subject", "the launch names no person (anonymous launches are not supported)")
    link, return_url, data = "", "", ""
    if kind == RESOURCE_LINK:
        resource = claims.get(CLAIM + "resource_link")
        found = resource.get("id") if isinstance(resource, dict) else None
        if not isinstance(found, str) or not found:
            raise LtiError("lti.invalid_launch", "a resource link launch without resource_link.id")
        link = found
    else:
        settings = claims.get(DL_CLAIM + "deep_linking_settings")
        settings = settings if isinstance(settings, dict) else {}
        url = settings.get("deep_link_return_url")
        if not isinstance(url, str) or url_problem(url, "return_url", loopback_ok=True):
            raise LtiError("lti.invalid_launch", "a deep linking request without a usable deep_link_return_url")
        return_url = url
        data = settings["data"] if isinstance(settings.get("data"), str) else ""
    presentation = claims.get(CLAIM + "launch_presentation")
    locale = presentation.get("locale") if isinstance(presentation, dict) else ""
    email = _text(claims, "email").lower()
    name = _text(claims, "name", 200) or " ".join(
        p for p in (_text(claims, "given_name", 100), _text(claims, "family_name", 100)) if p)
    return Launch(message_type=str(kind), deployment_id=deployment, subject=subject, email=email, name=name,
                  role=role_of(claims.get(CLAIM + "roles"), reg.instructor_role),
                  target=target_path(claims.get(CLAIM + "target_link_uri"), own_origins),
                  locale=locale[:20] if isinstance(locale, str) else "", resource_link=link,
                  return_url=return_url, return_data=data[:2000], frame_origins=frame_origins(reg, claims))
