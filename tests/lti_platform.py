"""An LTI 1.3 platform of our own for the tests (a tiny LMS), on loopback, built on joserfc: it serves its JWKS and
an OIDC authentication endpoint that answers with the auto-submitting form post of a signed launch, as Moodle,
Canvas and Brightspace do. It can be told to misbehave (wrong aud, an expired token, a tampered one, another
deployment) the way a broken platform or an attacker would.

    with LtiPlatform() as lms:
        lms.person = {"sub": "42", "email": "lotte@school.nl", "roles": ["...#Learner"]}
        form = lms.initiation(tool_login_url, target="https://r42/topics/aow")   # what the LMS posts to the tool
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


class LtiPlatform:
    def __init__(self, host: str = "127.0.0.1", client_id: str = "r42-tool", deployment_id: str = "dep-1"):
        self.client_id, self.deployment_id = client_id, deployment_id
        self.key = RSAKey.generate_key(2048, parameters={"kid": "lms-1", "use": "sig", "alg": "RS256"}, private=True)
        self.person: dict[str, Any] = {"sub": "lms-user-1", "email": "", "name": "", "roles": [LEARNER]}
        self.knobs: dict[str, Any] = {}  # aud | iss | deployment_id | nonce: another value; exp: seconds; tamper
        self.target = ""
        self.requests: list[tuple[str, str]] = []
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

    def initiation(self, login_url: str, target: str) -> dict[str, str]:
        """The fields of the LMS's third-party login initiation (posted to the tool's login URL)."""
        self.target = target
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
                  CLAIM + "message_type": "LtiResourceLinkRequest", CLAIM + "version": "1.3.0",
                  CLAIM + "deployment_id": self.knobs.get("deployment_id", self.deployment_id),
                  CLAIM + "target_link_uri": self.target, CLAIM + "resource_link": {"id": "resource-link-7"},
                  CLAIM + "roles": roles, CLAIM + "context": {"id": "course-1", "title": "Pensioen 101"},
                  CLAIM + "launch_presentation": {"locale": "nl-NL", "document_target": "iframe"}}
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

    def _handler(self):
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                platform.requests.append(("GET", parts.path))
                if parts.path == "/jwks":
                    status, body, kind = 200, json.dumps(KeySet([platform.key]).as_dict(private=False)).encode(), \
                        "application/json"
                elif parts.path == "/auth":
                    (status, body), kind = platform._auth(parse_qs(parts.query)), "text/html"
                else:
                    status, body, kind = 404, b"", "text/plain"
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
