"""OpenID Connect, the protocol: discovery, the authorization request (code flow with PKCE, `state`, `nonce`), the
code exchange, and the ID token's check. The only module that knows the JOSE library (joserfc: signatures, JWKS,
claims); the LTI tool will use the same one (docs/DESIGN.md "Single sign-on" says why).

Blocking (httpx): the app calls it in a thread. Every failure is an OidcError whose code the sign-in page shows;
its detail goes to the log and never holds a token or the client secret.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import KeySet, RSAKey
from joserfc.jwt import JWTClaimsRegistry

from r42_app.core.errors import UserError
from r42_app.core.sso import is_loopback, pkce_challenge

log = logging.getLogger(__name__)

DISCOVERY_TTL_S = 3600.0
JWKS_TTL_S = 3600.0
LEEWAY_S = 60  # clock difference allowed between the provider and us (exp, iat)
MAX_RESPONSE = 1_000_000  # bytes of a discovery document, a key set or a token response
TIMEOUT_S = 10.0
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class OidcError(UserError):
    """The provider could not be used, or its answer was refused; `code` is a catalogue code (sso.*)."""


@dataclass(frozen=True)
class Provider:
    """What discovery says of an issuer."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


def _endpoint_ok(url: object, issuer: str) -> bool:
    """An endpoint must be https (http only on loopback, as its issuer may be)."""
    if not isinstance(url, str):
        return False
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    return parts.scheme == "http" and bool(parts.hostname) and is_loopback(parts.hostname or "") and \
        urlsplit(issuer).scheme == "http"


class OidcClient:
    """One per process: discovery documents and key sets are cached per issuer (thread-safe)."""

    def __init__(self, http: httpx.Client | None = None, clock: Any = time.monotonic):
        self._http = http or httpx.Client(timeout=TIMEOUT_S, follow_redirects=False)
        self._clock = clock
        self._lock = threading.Lock()
        self._providers: dict[str, tuple[Provider, float]] = {}
        self._keys: dict[str, tuple[KeySet, float]] = {}  # jwks_uri -> (keys, fetched at)

    def _get_json(self, url: str, what: str) -> dict:
        try:
            with self._http.stream("GET", url, headers={"Accept": "application/json"}) as response:
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE:
                        raise OidcError("sso.unreachable", f"{what} at {url} is larger than {MAX_RESPONSE} bytes")
                if response.status_code != 200:
                    raise OidcError("sso.unreachable", f"{what} at {url} answered {response.status_code}")
            data = httpx.Response(200, content=body).json()
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise OidcError("sso.unreachable", f"{what} at {url} cannot be reached: {type(exc).__name__}") from exc
        except ValueError as exc:
            raise OidcError("sso.unreachable", f"{what} at {url} is not JSON") from exc
        if not isinstance(data, dict):
            raise OidcError("sso.unreachable", f"{what} at {url} is not a JSON object")
        return data

    def fetch_json(self, url: str, what: str) -> dict:
        """A JSON object from a peer (an LMS's openid-configuration for dynamic registration); OidcError saying
        what could not be had."""
        return self._get_json(url, what)

    def post_json(self, url: str, body: dict, bearer: str, what: str) -> tuple[int, dict]:
        """POST a JSON object (a tool's registration); (status, the JSON object answered, {} when none)."""
        headers = {"Accept": "application/json", **({"Authorization": f"Bearer {bearer}"} if bearer else {})}
        try:
            response = self._http.post(url, json=body, headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise OidcError("sso.unreachable", f"{what} at {url} cannot be reached: {type(exc).__name__}") from exc
        try:
            data = response.json() if len(response.content) <= MAX_RESPONSE else {}
        except ValueError:
            data = {}
        return response.status_code, data if isinstance(data, dict) else {}

    def provider(self, issuer: str) -> Provider:
        """The issuer's endpoints from `/.well-known/openid-configuration` (cached DISCOVERY_TTL_S). The document
        must name the same issuer (a mix-up defence: a provider cannot speak for another)."""
        with self._lock:
            cached = self._providers.get(issuer)
        if cached and self._clock() - cached[1] < DISCOVERY_TTL_S:
            return cached[0]
        doc = self._get_json(issuer.rstrip("/") + "/.well-known/openid-configuration", "discovery")
        if doc.get("issuer") != issuer:
            raise OidcError("sso.unreachable", f"discovery names issuer {doc.get('issuer')!r}, not {issuer!r}",
                            problem="issuer", named=str(doc.get("issuer"))[:200])  # (read, but of another issuer)
        endpoints = {name: doc.get(name) for name in ("authorization_endpoint", "token_endpoint", "jwks_uri")}
        bad = [name for name, url in endpoints.items() if not _endpoint_ok(url, issuer)]
        if bad:
            raise OidcError("sso.unreachable", f"discovery of {issuer}: unusable {', '.join(bad)}",
                            problem="endpoints", named=", ".join(bad))
        found = Provider(issuer=issuer, **{k: str(v) for k, v in endpoints.items()})
        with self._lock:
            self._providers[issuer] = (found, self._clock())
        return found

    def authorization_url(self, provider: Provider, client_id: str, redirect_uri: str, state: str, nonce: str,
                          verifier: str, login_hint: str = "") -> str:
        """Where the browser goes to sign in: the code flow with PKCE (S256), `state` and `nonce`."""
        params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                  "scope": "openid email profile", "state": state, "nonce": nonce,
                  "code_challenge": pkce_challenge(verifier), "code_challenge_method": "S256"}
        if login_hint:
            params["login_hint"] = login_hint
        sep = "&" if urlsplit(provider.authorization_endpoint).query else "?"
        return provider.authorization_endpoint + sep + urlencode(params)

    def exchange(self, provider: Provider, client_id: str, secret: str, code: str, verifier: str,
                 redirect_uri: str) -> str:
        """The ID token for `code` (client_secret_basic, with the PKCE verifier)."""
        # client_secret_basic: both form-encoded before Basic (RFC 6749 2.3.1), so a secret with "+", "%" or ":" works
        basic = (quote(client_id, safe=""), quote(secret, safe=""))
        try:
            response = self._http.post(provider.token_endpoint, auth=basic,
                                       data={"grant_type": "authorization_code", "code": code,
                                             "redirect_uri": redirect_uri, "code_verifier": verifier},
                                       headers={"Accept": "application/json"})
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise OidcError("sso.unreachable", f"token endpoint cannot be reached: {type(exc).__name__}") from exc
        if len(response.content) > MAX_RESPONSE:
            raise OidcError("sso.unreachable", "the token response is too large")
        try:
            data = response.json()
        except ValueError:
            data = {}
        if response.status_code != 200 or not isinstance(data, dict):
            error = data.get("error") if isinstance(data, dict) else None
            raise OidcError("sso.token_refused", f"token endpoint answered {response.status_code} "
                                                 f"({str(error)[:80] if error else 'no error code'})")
        token = data.get("id_token")
        if not isinstance(token, str) or not token:
            raise OidcError("sso.token_invalid", "the token response has no id_token")
        return token

    def _key_set(self, jwks_uri: str, refresh: bool = False) -> KeySet:
        with self._lock:
            cached = self._keys.get(jwks_uri)
        now = self._clock()
        # an unknown key id fetches the set again (the provider rotated its keys). Only a token from the provider's
        # own token endpoint, for a code it issued for our state, gets here: a stranger cannot make us fetch
        if cached and now - cached[1] < JWKS_TTL_S and not refresh:
            return cached[0]
        data = self._get_json(jwks_uri, "key set")
        try:
            keys = KeySet.import_key_set(data)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise OidcError("sso.unreachable", f"the key set at {jwks_uri} cannot be read: {exc}") from exc
        with self._lock:
            self._keys[jwks_uri] = (keys, now)
        return keys

    def verify(self, provider: Provider, id_token: str, client_id: str, nonce: str) -> dict:
        """The ID token's claims once its signature (the provider's key set; a key id not in it fetches the set
        again: rotation) and its `iss`, `aud` (and `azp` when there are several), `exp`, `iat` and `nonce` hold."""
        return self.verify_token(provider.jwks_uri, provider.issuer, id_token, client_id, nonce)

    def verify_token(self, jwks_uri: str, issuer: str, id_token: str, client_id: str, nonce: str,
                     prefix: str = "sso") -> dict:
        """`verify` for any issuer of ID tokens (an identity provider, or an LMS launching R42: `prefix` "lti"
        gives the refusals the LTI catalogue codes)."""
        try:
            keys = self._key_set(jwks_uri)
        except OidcError as exc:
            raise OidcError(f"{prefix}.unreachable", str(exc)) from exc
        try:
            try:
                token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
            except JoseError as exc:
                if type(exc).__name__ != "InvalidKeyIdError":
                    raise
                keys = self._key_set(jwks_uri, refresh=True)  # the issuer may have rotated its keys
                token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
            JWTClaimsRegistry(
                leeway=LEEWAY_S,
                iss={"essential": True, "value": issuer},
                aud={"essential": True, "value": client_id},
                exp={"essential": True},
                iat={"essential": True},
                sub={"essential": True},
                nonce={"essential": True, "value": nonce},
            ).validate(token.claims)
        except ExpiredTokenError as exc:
            raise OidcError(f"{prefix}.token_expired", "the ID token has expired") from exc
        except OidcError as exc:  # the key set, fetched again, could not be read
            raise OidcError(f"{prefix}.unreachable", str(exc)) from exc
        except (JoseError, ValueError, TypeError) as exc:
            raise OidcError(f"{prefix}.token_invalid", f"the ID token was refused: {type(exc).__name__}: "
                                                       f"{str(exc)[:120]}") from exc
        claims = dict(token.claims)
        aud = claims.get("aud")
        if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != client_id:
            raise OidcError(f"{prefix}.token_invalid", "the ID token names several audiences and another azp")
        return claims

    def close(self) -> None:
        self._http.close()


class ToolKey:
    """The LTI tool's own RSA key (an app secret, the same for every worker), for what R42 signs: deep-linking
    responses. `public` is what `/lti/jwks` serves."""

    def __init__(self, private_jwk_json: str):
        import json

        self._key = RSAKey.import_key(json.loads(private_jwk_json))

    @staticmethod
    def new_json() -> str:
        import json

        key = RSAKey.generate_key(2048, parameters={"use": "sig", "alg": "RS256"}, private=True)
        key.ensure_kid()
        return json.dumps(key.as_dict(private=True))

    @property
    def kid(self) -> str:
        return str(self._key.kid)

    def public(self) -> dict:
        return dict(KeySet([self._key]).as_dict(private=False))

    def sign(self, claims: dict) -> str:
        return jwt.encode({"alg": "RS256", "kid": self.kid, "typ": "JWT"}, claims, self._key)
