"""ASGI middleware: a cap on the body of Reflex's upload route (`/_upload`, "Documenten toevoegen").

Reflex parses an upload's whole form (spooling its files to disk) before the event handler runs, so the handler's
admin check comes after the bytes. This caps what anyone can send there: a declared Content-Length over the
limit is refused at once with 413, and a body that streams past it is cut off with 413 as soon as it does.
"""

from __future__ import annotations

import json
from typing import Any

from r42_app.core.messages import msg

UPLOAD_PATH = "/_upload"
UPLOAD_LIMIT_BYTES = 260 * 1024 * 1024  # five files of 50 MB (core/documents.py MAX_FILE_BYTES) and the form


class UploadLimit:
    def __init__(self, app: Any, limit: int = UPLOAD_LIMIT_BYTES):
        self.app = app
        self.limit = limit

    async def _too_large(self, send) -> None:
        body = json.dumps({"type": "payload_too_large", "message": msg("doc.upload_too_large")}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).rstrip("/").endswith(UPLOAD_PATH):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared and (not declared.isdigit() or int(declared) > self.limit):
            await self._too_large(send)
            return
        seen = 0
        started = False

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def watched(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await self._too_large(send)


class _TooLarge(Exception):
    pass


def upload_limit(app: Any) -> Any:
    """The API transformer: `app` with the upload route's body capped."""
    return UploadLimit(app)
