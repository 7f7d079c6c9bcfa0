"""ASGI middleware: the security headers (core/csp.py) on every response the app serves, its pages included.

Mounted as the outermost API transformer (r42_app.py), so it sees Reflex's own routes, the built frontend
and our API alike. A page (text/html) is held until its body is complete, so its Content-Security-Policy can
name the SHA-256 of each inline script it carries; anything else passes through at once, streams included. A
304 carries no policy: the browser updates the cached page's headers from it, and an empty body has no scripts.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from r42_app.core.csp import SECURITY_HEADERS, content_security_policy, inline_script_hashes
from r42_app.core.lti import FRAME_PARAM, framing_origins
from r42_app.settings import load_settings

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]  # starlette.types' own
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

MAX_PAGE_BYTES = 4 * 1024 * 1024  # a larger HTML answer streams on with the policy that allows no inline script
_CSP = b"content-security-policy"
# What a route of ours asks of the policy (the LTI routes: who may frame this answer, where its form may post);
# read here and never sent on.
FRAME_ANCESTORS = b"x-r42-frame-ancestors"
FORM_ACTION = b"x-r42-form-action"
_OURS = {_CSP, FRAME_ANCESTORS, FORM_ACTION} | {name.lower().encode() for name in SECURITY_HEADERS}
_XFO = b"x-frame-options"


def _grant_of(query: bytes) -> str:
    for pair in query.split(b"&"):
        name, _, value = pair.partition(b"=")
        if name == FRAME_PARAM.encode():
            return value.decode("ascii", "replace")  # base64url and ".": nothing to unquote
    return ""


async def _frame_key() -> bytes:
    from r42_app.container import services

    return await asyncio.to_thread(lambda: services().frame_key)


class SecurityHeaders:
    def __init__(self, app: ASGIApp, app_origins: tuple[str, ...],
                 frame_key: Callable[[], Awaitable[bytes]] = _frame_key):
        self.app = app
        self.app_origins = app_origins
        self.frame_key = frame_key
        self.fixed = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
        self.no_inline = content_security_policy((), app_origins).encode()

    def _headers(self, headers: list[tuple[bytes, bytes]], policy: bytes,
                 framed: bool = False) -> list[tuple[bytes, bytes]]:
        fixed = [(k, v) for k, v in self.fixed if not (framed and k == _XFO)]  # frame-ancestors says who may
        return [(k, v) for k, v in headers if k.lower() not in _OURS] + fixed + [(_CSP, policy)]

    async def _granted(self, scope: Scope) -> tuple[str, ...]:
        """The origins a page's signed `r42_frame` grant lets frame it (() without one, or for a forged one)."""
        grant = _grant_of(scope.get("query_string") or b"")
        if not grant:
            return ()
        try:
            key = await self.frame_key()
        except Exception as exc:  # noqa: BLE001 - PocketBase away: the page is not framed, never more
            log.warning("the frame key could not be read; the page refuses to be framed: %s", exc)
            return ()
        return framing_origins(grant, key, time.time())

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        body: list[bytes] = []
        size = 0
        granted = await self._granted(scope)

        async def send_with_headers(message: Message) -> None:
            nonlocal held, size
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if message.get("status") == 304:  # the browser keeps the policy it got with the page itself
                    kept = [(k, v) for k, v in headers if k.lower() not in _OURS] + self.fixed
                    await send({**message, "headers": kept})
                    return
                content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if content_type.startswith(b"text/html"):
                    held = message  # sent with the body, once the policy can name its scripts
                    return
                await send({**message, "headers": self._headers(headers, self.no_inline)})
                return
            if message["type"] != "http.response.body" or held is None:
                await send(message)
                return
            chunk = message.get("body", b"")
            body.append(chunk)
            size += len(chunk)
            if message.get("more_body", False) and size <= MAX_PAGE_BYTES:
                return
            page = b"".join(body)
            named = {k.lower(): v for k, v in held.get("headers", [])}
            text = _page_text(page, named.get(b"content-encoding"))
            ancestors = granted or tuple(named.get(FRAME_ANCESTORS, b"").decode().split())
            actions = tuple(named.get(FORM_ACTION, b"").decode().split())
            scripts = inline_script_hashes(text) if size <= MAX_PAGE_BYTES and text is not None else []
            policy = content_security_policy(scripts, self.app_origins, ancestors, actions).encode()
            start, held = held, None
            body.clear()
            await send({**start, "headers": self._headers(list(start.get("headers", [])), policy, bool(ancestors))})
            await send({"type": "http.response.body", "body": page, "more_body": message.get("more_body", False)})

        extensions = scope.get("extensions") or {}
        if "http.response.pathsend" in extensions:  # Granian's file sending skips the body messages a page needs
            scope = {**scope, "extensions": {k: v for k, v in extensions.items() if k != "http.response.pathsend"}}
        await self.app(scope, receive, send_with_headers)


def _page_text(body: bytes, encoding: bytes | None) -> str | None:
    """The page as text, also when it is served precompressed (rxconfig builds gzip copies); None for an
    encoding we cannot read (its inline scripts are then not allowed)."""
    try:
        if encoding in (None, b"", b"identity"):
            return body.decode("utf-8", "replace")
        if encoding == b"gzip":
            return zlib.decompress(body, wbits=31).decode("utf-8", "replace")
    except zlib.error:
        return None
    return None


def security_headers(app: ASGIApp) -> ASGIApp:
    """The API transformer: `app` with the security headers on every response."""
    settings = load_settings()
    return SecurityHeaders(app, settings.own_origins)
