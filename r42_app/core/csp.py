"""The security headers of every response, and the Content-Security-Policy of a page.

A page may run only scripts from this origin and the inline scripts it was built with (each allowed by its
SHA-256, so a script that an injection slips into the page runs nowhere); it may connect only to the app
(HTTP and its websocket), show images only from the app and `data:`, embed no plugin or frame, and never
be framed (but a page opened from a registered learning environment, by that environment: LTI). Reflex itself
needs two allowances, both named here: its server-sent actions (toasts, scripts an event handler returns) run
through `eval` ('unsafe-eval'), and its styling writes `<style>` elements and style attributes ('unsafe-inline'
for styles, never for scripts).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable

# A <script> without a src: its text between the tags is what the browser hashes.
_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\ssrc\s*=)[^>]*>(.*?)</script\s*>", re.S | re.I)

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
}


def inline_script_hashes(html: str) -> list[str]:
    """The CSP source expressions ('sha256-…') of the page's inline scripts, sorted and without repeats."""
    digests = {base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
               for body in _INLINE_SCRIPT.findall(html)}
    return [f"'sha256-{d}'" for d in sorted(digests)]


def websocket_origin(url: str) -> str:
    """ws(s)://host:port of an http(s) origin ('' for anything else)."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    ws = {"http": "ws", "https": "wss"}.get(scheme.lower())
    return f"{ws}://{host}" if ws and host else ""


def content_security_policy(script_hashes: Iterable[str] = (), app_origins: Iterable[str] = (),
                            frame_ancestors: Iterable[str] = (), form_action: Iterable[str] = ()) -> str:
    """The policy for a page whose inline scripts have these hashes, served by an app reachable at
    `app_origins` (the browser's websocket goes to the configured app URL, which may differ from the
    address in the tab, e.g. localhost vs 127.0.0.1). Only a page opened from a learning environment names
    `frame_ancestors` (its platform's origins: the LTI launch's signed grant), and only the deep-linking answer
    a `form_action` beyond this app (the platform's return URL)."""
    ancestors = list(dict.fromkeys(o for o in frame_ancestors if o))
    origins = list(dict.fromkeys(o.rstrip("/") for o in app_origins if o))
    connect = ["'self'", *origins, *filter(None, (websocket_origin(o) for o in origins))]
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'", "'unsafe-eval'", *script_hashes],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": connect,
        "worker-src": ["'self'", "blob:"],
        "media-src": ["'self'"],
        "frame-src": ["'none'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'", *dict.fromkeys(o for o in form_action if o)],
        "frame-ancestors": ancestors or ["'none'"],
    }
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())
