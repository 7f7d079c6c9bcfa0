"""An LTI 1.3 platform of our own for the tests (a tiny LMS), on loopback, built on joserfc: it serves its JWKS and
an OIDC authentication endpoint that answers with the auto-submitting form post of a signed launch, as Moodle,
Canvas and Brightspace do. It can be told to misbehave (wrong aud, an expired token, a tampered one, another
deployment) the way a broken platform or an attacker would.

It also does what a teacher's LMS does with deep linking (a DeepLinkingRequest launch; `/deep-link-return` takes
the tool's signed answer and checks it against the tool's JWKS: `accept_deep_link`) and with IMS Dynamic
Registration (an openid-configuration with a registration endpoint that hands out a client id and a deployment).

    with LtiPlatform() as lms:
        lms.person = {"sub": "42", "email": "lotte@school.nl", "roles": ["...#Learner"]}
        form = lms.initiation(tool_login_url, target="https://r42/topics/aow")   # what the LMS posts to the tool
"""

from __future__ import annotations

import base64
import html
import json
import re
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


class LtiPlatform:
    def __init__(self, host: str = "127.0.0.1", client_id: str = "r42-tool", deployment_id: str = "dep-1"):
        self.client_id, self.deployment_id = client_id, deployment_id
        self.key = RSAKey.generate_key(2048, parameters={"kid": "lms-1", "use": "sig", "alg": "RS256"}, private=True)
        self.person: dict[str, Any] = {"sub": "lms-user-1", "email": "", "name": "", "roles": [LEARNER]}
        self.knobs: dict[str, Any] = {}  # aud | iss | deployment_id | nonce: another value; exp: seconds; tamper
        self.target = ""
        self.message_type = "LtiResourceLinkRequest"
        self.dl_data = "opaque-" + secrets.token_hex(6)  # what the LMS wants back unchanged
        self.tool_jwks_url = ""  # where /deep-link-return fetches the tool's keys (Moodle: the registered JWKS URL)
        self.deep_links: list[dict[str, Any]] = []  # checked content items received at /deep-link-return
        self.deep_link_errors: list[str] = []
        self.registration_token = "reg-" + secrets.token_hex(8)
        self.registered: list[dict[str, Any]] = []  # the tool registrations received (dynamic registration)
        self.requests: list[tuple[str, str]] = []
        self.tool_login_url = ""  # the course page (/course/1) frames the tool's login initiation with this target
        self.course_target = ""
        self._server = ThreadingHTTPServer((host, 0), self._handler())
        self.issuer = f"http://{host}:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LtiPlatform:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def auth_url(self) -> str:
        return f"{self.issuer}/auth"

    @property
    def openid_configuration(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def initiation(self, login_url: str, target: str, deep_link: bool = False) -> dict[str, str]:
        """The fields of the LMS's third-party login initiation (posted to the tool's login URL); `deep_link`: a
        teacher adding the tool to a course."""
        self.target = target
        self.message_type = "LtiDeepLinkingRequest" if deep_link else "LtiResourceLinkRequest"
        return {"iss": self.issuer, "login_hint": self.person["sub"], "target_link_uri": target,
                "lti_message_hint": "resource-link-7", "client_id": self.client_id,
                "lti_deployment_id": self.deployment_id}

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        person = dict(self.person)
        roles = person.pop("roles", [LEARNER])
        claims = {"iss": self.knobs.get("iss", self.issuer), "aud": self.knobs.get("aud", self.client_id),
                  "azp": self.client_id, "iat": now, "exp": now + int(self.knobs.get("exp", 300)),
                  "nonce": self.knobs.get("nonce", nonce), **{k: v for k, v in person.items() if v},
                  CLAIM + "message_type": self.message_type, CLAIM + "version": "1.3.0",
                  CLAIM + "deployment_id": self.knobs.get("deployment_id", self.deployment_id),
                  CLAIM + "target_link_uri": self.target,
                  CLAIM + "roles": roles, CLAIM + "context": {"id": "course-1", "title": "Pensioen 101"},
                  CLAIM + "launch_presentation": {"locale": self.knobs.get("locale", "nl-NL"), "document_target": "iframe",
                                                  "return_url": f"{self.issuer}/course/1"}}
        if self.message_type == "LtiDeepLinkingRequest":
            claims[DL_CLAIM + "deep_linking_settings"] = {
                "deep_link_return_url": f"{self.issuer}/deep-link-return", "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"], "data": self.dl_data}
        else:
            claims[CLAIM + "resource_link"] = {"id": "resource-link-7"}
        key = self.knobs.get("key") or self.key
        token = jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)
        if self.knobs.get("tamper"):
            head, body, sig = token.split(".")
            forged = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            forged[CLAIM + "roles"] = [INSTRUCTOR]  # a learner making themselves a teacher
            body = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
            token = ".".join((head, body, sig))
        return token

    def _auth(self, query: dict[str, list[str]]) -> tuple[int, bytes]:
        one = {k: v[0] for k, v in query.items()}
        wanted = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
                  "client_id": self.client_id, "login_hint": self.person["sub"]}
        wrong = [k for k, v in wanted.items() if one.get(k) != v]
        if wrong or not one.get("state") or not one.get("nonce") or not one.get("redirect_uri"):
            return 400, f"bad authentication request: {wrong}".encode()
        token = self.id_token(one["nonce"])
        page = (f'<form method="post" action="{html.escape(one["redirect_uri"])}">'
                f'<input type="hidden" name="id_token" value="{html.escape(token)}">'
                f'<input type="hidden" name="state" value="{html.escape(one["state"])}"></form>'
                "<script>document.forms[0].submit()</script>")
        return 200, page.encode()

    def accept_deep_link(self, token: str, tool_jwks: dict[str, Any]) -> list[dict[str, Any]]:
        """What an LMS does with the tool's deep-linking answer: the signature against the tool's key set, then
        iss (the client id), aud (this issuer), exp, the message type and version, the deployment and the echoed
        data. Returns its content items (ValueError saying what does not hold)."""
        from joserfc.errors import JoseError

        try:
            decoded = jwt.decode(token, KeySet.import_key_set(tool_jwks), algorithms=["RS256"])
        except (JoseError, ValueError) as exc:
            raise ValueError(f"signature: {exc}") from exc
        claims = decoded.claims
        aud = claims.get("aud")
        checks = {"iss": claims.get("iss") == self.client_id,
                  "aud": aud == self.issuer or (isinstance(aud, list) and self.issuer in aud),
                  "exp": isinstance(claims.get("exp"), int) and claims["exp"] > time.time(),
                  "nonce": bool(claims.get("nonce")),
                  "message_type": claims.get(CLAIM + "message_type") == "LtiDeepLinkingResponse",
                  "version": claims.get(CLAIM + "version") == "1.3.0",
                  "deployment_id": claims.get(CLAIM + "deployment_id") == self.deployment_id,
                  "data": claims.get(DL_CLAIM + "data") == self.dl_data}
        wrong = [name for name, ok in checks.items() if not ok]
        if wrong:
            raise ValueError(f"claims that do not hold: {wrong}")
        items = claims.get(DL_CLAIM + "content_items")
        if not isinstance(items, list) or not items:
            raise ValueError("no content items")
        return items

    def _deep_link_return(self, form: dict[str, list[str]]) -> tuple[int, bytes]:
        import httpx

        try:
            keys = httpx.get(self.tool_jwks_url, timeout=10).json()
            items = self.accept_deep_link(form.get("JWT", [""])[0], keys)
        except (ValueError, httpx.HTTPError) as exc:
            self.deep_link_errors.append(str(exc))
            return 400, f"<p id=lms-error>{html.escape(str(exc))}</p>".encode()
        self.deep_links.extend(items)
        titles = "".join(f"<li>{html.escape(str(i.get('title')))}</li>" for i in items)
        return 200, f"<h1 id=lms-added>Toegevoegd</h1><ul>{titles}</ul>".encode()

    def _configuration(self) -> dict[str, Any]:
        return {"issuer": self.issuer, "authorization_endpoint": self.auth_url, "jwks_uri": self.jwks_url,
                "token_endpoint": f"{self.issuer}/token", "registration_endpoint": f"{self.issuer}/register",
                "scopes_supported": ["openid"], "response_types_supported": ["id_token"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                PLATFORM_CONFIG: {"product_family_code": "r42-test-lms", "version": "1.0",
                                  "messages_supported": [{"type": "LtiResourceLinkRequest"},
                                                         {"type": "LtiDeepLinkingRequest"}]},
                **self.knobs.get("configuration", {})}

    def _register(self, body: dict[str, Any], auth: str) -> tuple[int, dict[str, Any]]:
        """IMS Dynamic Registration 3.5: the tool's configuration, with the one-time token, gets a client id and a
        deployment."""
        if auth != f"Bearer {self.registration_token}":
            return 401, {"error": "invalid_token"}
        tool = body.get(TOOL_CONFIG) if isinstance(body, dict) else None
        needed = ("initiate_login_uri", "redirect_uris", "jwks_uri", "client_name")
        missing = [k for k in needed if not body.get(k)] + ([] if isinstance(tool, dict) else [TOOL_CONFIG])
        if missing or body.get("response_types") != ["id_token"] or body.get("application_type") != "web" \
                or body.get("token_endpoint_auth_method") != "private_key_jwt":
            return 400, {"error": "invalid_client_metadata", "missing": missing}
        self.registered.append(body)
        self.client_id, self.deployment_id = f"client-{len(self.registered)}", f"dep-dr-{len(self.registered)}"
        return 200, {**body, "client_id": self.client_id,
                     TOOL_CONFIG: {**tool, "deployment_id": self.deployment_id}}

    def _handler(self):
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                platform.requests.append(("GET", parts.path))
                if parts.path == "/.well-known/openid-configuration":
                    status, body, kind = 200, json.dumps(platform._configuration()).encode(), "application/json"
                elif parts.path == "/course/1":  # a course page that opens the tool in a frame, as Moodle does
                    query = urlencode(platform.initiation(platform.tool_login_url, platform.course_target))
                    status, kind = 200, "text/html"
                    body = (f'<!doctype html><html lang="nl"><title>Pensioen 101</title><h1>Pensioen 101</h1>'
                            f'<iframe id="lms-frame" title="R42" style="width:1200px;height:760px" '
                            f'src="{html.escape(platform.tool_login_url)}?{html.escape(query)}"></iframe>').encode()
                elif parts.path == "/frames":  # an LMS page framing a tool page that was not launched
                    status, kind = 200, "text/html"
                    body = (f'<!doctype html><html lang="nl"><title>Elders</title><iframe id="lms-frame" title="x" '
                            f'src="{html.escape(parse_qs(parts.query).get("src", [""])[0])}"></iframe>').encode()
                elif parts.path == "/jwks":
                    status, body, kind = 200, json.dumps(KeySet([platform.key]).as_dict(private=False)).encode(), \
                        "application/json"
                elif parts.path == "/auth":
                    (status, body), kind = platform._auth(parse_qs(parts.query)), "text/html"
                else:
                    status, body, kind = 404, b"", "text/plain"
                self._send(status, body, kind)

            def do_POST(self) -> None:  # noqa: N802
                parts = urlsplit(self.path)
                platform.requests.append(("POST", parts.path))
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if parts.path == "/deep-link-return":
                    status, body = platform._deep_link_return(parse_qs(raw.decode()))
                    self._send(status, b"<!doctype html><html lang=nl><title>LMS</title>" + body, "text/html")
                elif parts.path == "/register":
                    try:
                        sent = json.loads(raw or b"{}")
                    except ValueError:
                        sent = {}
                    status, answer = platform._register(sent, self.headers.get("Authorization", ""))
                    self._send(status, json.dumps(answer).encode(), "application/json")
                else:
                    self._send(404, b"", "text/plain")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def form_fields(page: str) -> tuple[str, dict[str, str]]:
    """The action and fields of an auto-submitting form page (what a browser would post)."""
    action = html.unescape(re.search(r'<form method="post" action="([^"]*)"', page).group(1))
    fields = {html.unescape(n): html.unescape(v) for n, v in re.findall(r'name="([^"]+)" value="([^"]*)"', page)}
    return action, fields


__all__ = ["INSTRUCTOR", "LEARNER", "LtiPlatform", "form_fields"]
