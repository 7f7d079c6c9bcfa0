"""An OpenID provider of our own for the single sign-on tests, on loopback, built on joserfc: it serves a real
discovery document and JWKS, enforces PKCE (S256), the client secret, single-use codes and the redirect URI, and
signs real ID tokens. Unlike the independent provider the happy paths also run against (oidc-provider-mock), it can
be told to misbehave the way an attacker or a broken provider would: a wrong nonce, audience or issuer, an expired
token, a tampered signature, a key that is rotated away.

    with OidcPeer() as peer:
        peer.person = {"sub": "u1", "email": "a@acme.nl", "email_verified": True, "groups": ["r42-admins"]}
        peer.knobs["nonce"] = "wrong"
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey


def _new_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"}, private=True)


class OidcPeer:
    def __init__(self, host: str = "127.0.0.1", client_id: str = "r42-test", secret: str = ""):
        self.client_id = client_id
        self.secret = secret or secrets.token_urlsafe(24) + "+:%/ é"  # what a client must form-encode
        self.keys = [_new_key("k1")]
        self.person: dict[str, Any] = {}
        self.knobs: dict[str, Any] = {}  # nonce | aud | iss: a value to put instead; exp: seconds from now; tamper
        self.codes: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self.token_requests: list[dict[str, list[str]]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), self._handler())
        self.issuer = f"http://{host}:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OidcPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def rotate(self) -> None:
        """A new signing key; the old one leaves the JWKS (what a provider's scheduled rotation does)."""
        with self._lock:
            self.keys = [_new_key(f"k{len(self.keys) + 1}-{secrets.token_hex(2)}")]

    # -- the provider's answers --------------------------------------------------------------------------------------

    def _discovery(self) -> dict[str, Any]:
        return {"issuer": self.knobs.get("discovery_issuer", self.issuer),
                "authorization_endpoint": f"{self.issuer}/authorize", "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks", "response_types_supported": ["code"],
                "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"]}

    def _jwks(self) -> dict[str, Any]:
        with self._lock:
            return KeySet(list(self.keys)).as_dict(private=False)

    def _authorize(self, query: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        one = {k: v[0] for k, v in query.items()}
        if one.get("client_id") != self.client_id or one.get("response_type") != "code":
            return 400, {}, b"unknown client or response type"
        if one.get("code_challenge_method") != "S256" or not one.get("code_challenge"):
            return 400, {}, b"PKCE (S256) is required"
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"nonce": one.get("nonce", ""), "challenge": one["code_challenge"],
                            "redirect_uri": one.get("redirect_uri", ""), "person": dict(self.person)}
        location = one.get("redirect_uri", "") + "?" + urlencode(
            {"code": code, "state": one.get("state", "")} if "deny" not in self.knobs else
            {"error": "access_denied", "state": one.get("state", "")})
        return 302, {"Location": location}, b""

    def _token(self, form: dict[str, list[str]], auth: str) -> tuple[int, dict[str, Any]]:
        self.token_requests.append(form)
        # RFC 6749 2.3.1: id and secret form-encoded, then "id:secret" in Basic
        try:
            given_id, _, given_secret = base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")
        except ValueError:
            return 401, {"error": "invalid_client"}
        if (unquote_plus(given_id), unquote_plus(given_secret)) != (self.client_id, self.secret):
            return 401, {"error": "invalid_client"}
        one = {k: v[0] for k, v in form.items()}
        grant = self.codes.pop(one.get("code", ""), None)  # single use
        if grant is None or one.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant"}
        if one.get("redirect_uri") != grant["redirect_uri"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"}
        verifier = one.get("code_verifier", "")
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if digest != grant["challenge"]:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verifier does not match"}
        now = int(time.time())
        claims = {"iss": self.knobs.get("iss", self.issuer), "aud": self.knobs.get("aud", self.client_id),
                  "iat": now, "exp": now + int(self.knobs.get("exp", 300)),
                  "nonce": self.knobs.get("nonce", grant["nonce"]), **grant["person"]}
        with self._lock:
            key = self.knobs.get("key") or self.keys[0]
        token = jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)
        if self.knobs.get("tamper"):  # the claims changed after signing: another e-mail, same signature
            head, body, sig = token.split(".")
            forged = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            forged["email"] = self.knobs["tamper"]
            body = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
            token = ".".join((head, body, sig))
        return 200, {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "expires_in": 300,
                     "id_token": token}

    def _handler(self):
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                      kind: str = "application/json") -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                peer.requests.append(("GET", parts.path))
                if parts.path == "/.well-known/openid-configuration":
                    self._send(200, json.dumps(peer._discovery()).encode())
                elif parts.path == "/jwks":
                    self._send(200, json.dumps(peer._jwks()).encode())
                elif parts.path == "/authorize":
                    status, headers, body = peer._authorize(parse_qs(parts.query))
                    self._send(status, body, headers, "text/plain")
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:  # noqa: N802
                parts = urlsplit(self.path)
                peer.requests.append(("POST", parts.path))
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                if parts.path != "/token":
                    self._send(404, b"{}")
                    return
                status, body = peer._token(form, self.headers.get("Authorization", ""))
                self._send(status, json.dumps(body).encode())

        return Handler
