"""ASGI middleware in front of Reflex's upload route (`/_upload`, "Documenten toevoegen"): who may send, how many at
once, how much, and how slowly.

Reflex parses an upload's whole form (spooling its files to disk) before the event handler runs, so the handler's
admin check comes after the bytes. This middleware decides before the first byte is read:

1. **Signed in.** The tab's `Reflex-Client-Token` must hold an upload permit (services/uploads.py: put there by
   /admin/topics for a signed-in admin, gone at sign-out). Without one: 401, and nothing of the body is read.
2. **Not too much.** A declared Content-Length over the limit: 413 at once.
3. **Not too many.** The upload takes a slot of its user, of its tenant (R42_UPLOADS_PER_USER,
   R42_UPLOADS_PER_TENANT, over every worker) and of its tab (one at a time); with one of them full: 429 with
   Retry-After. The slots are held until the upload's answer is sent.
4. **Not too slowly.** A body that sends nothing for R42_UPLOAD_READ_TIMEOUT_S is cut off with 408, one that
   streams past the limit with 413: Reflex hears that the client went away (it closes what it had spooled) and
   the client gets the reason.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
from typing import Any

from r42_app.core.documents import MAX_UPLOAD_BYTES
from r42_app.core.messages import msg
from r42_app.services.runtime.shared_state import SharedState, SharedStateUnavailable
from r42_app.services.uploads import RETRY_AFTER_S, permit_of, slot_limits, upload_slots

UPLOAD_PATH = "/_upload"
UPLOAD_LIMIT_BYTES = MAX_UPLOAD_BYTES + 10 * 1024 * 1024  # the files (core/documents.py) and the form around them
CLIENT_TOKEN = b"reflex-client-token"


class UploadLimit:
    def __init__(self, app: Any, limit: int = UPLOAD_LIMIT_BYTES, shared: SharedState | None = None,
                 per_user: int | None = None, per_tenant: int | None = None, read_timeout: float | None = None):
        """`shared` and the limits default to the app's (the container's shared state and settings)."""
        self.app = app
        self.limit = limit
        self._shared = shared
        self._limits = (per_user, per_tenant, read_timeout)

    def _config(self) -> tuple[SharedState, int, int, float]:
        per_user, per_tenant, read_timeout = self._limits
        if self._shared is not None and None not in self._limits:
            return self._shared, per_user, per_tenant, read_timeout  # type: ignore[return-value]
        from r42_app.container import services

        cfg = services().settings
        return (self._shared or services().shared, per_user or cfg.uploads_per_user,
                per_tenant or cfg.uploads_per_tenant, read_timeout or cfg.upload_read_timeout)

    @staticmethod
    async def _answer(send, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"type": kind, "message": message}, ensure_ascii=False).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).rstrip("/").endswith(UPLOAD_PATH):
            await self.app(scope, receive, send)
            return
        shared, per_user, per_tenant, read_timeout = self._config()
        headers = dict(scope.get("headers") or [])
        token = headers.get(CLIENT_TOKEN, b"").decode("latin-1")
        try:
            permit = await permit_of(shared, token)
        except SharedStateUnavailable:
            await self._answer(send, 503, "unavailable", msg("doc.upload_failed"))
            return
        if permit is None:
            await self._answer(send, 401, "unauthenticated", msg("doc.upload_unsigned"))
            return
        declared = headers.get(b"content-length", b"")
        if declared and (not declared.isdigit() or int(declared) > self.limit):
            await self._answer(send, 413, "payload_too_large", msg("doc.upload_too_large"))
            return
        limits = slot_limits(permit.user_id, permit.tenant_id, per_user, per_tenant, tab=token)
        async with upload_slots(shared, limits, holder=secrets.token_hex(8)) as taken:
            if not taken:
                await self._answer(send, 429, "uploads_busy", msg("doc.uploads_busy", seconds=RETRY_AFTER_S),
                                   {"Retry-After": str(RETRY_AFTER_S)})
                return
            await self._pass(scope, receive, send, read_timeout)

    async def _pass(self, scope, receive, send, read_timeout: float) -> None:
        """The upload, through Reflex, with its body timed and counted; cut off as the client going away."""
        seen = 0
        cut = ""
        started = False
        body_done = False  # after the body, a receive waits for the client to go away (Reflex's answer listens)

        async def timed() -> dict:
            nonlocal seen, cut, body_done
            if cut:
                return {"type": "http.disconnect"}
            if body_done:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), read_timeout)
            except TimeoutError:
                cut = "timeout"
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    cut = "too_large"
                    return {"type": "http.disconnect"}
                body_done = not message.get("more_body", False)
            return message

        async def watched(message: dict) -> None:
            nonlocal started
            if cut and not started:  # Reflex's answer to a "client" that went away: ours instead
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, timed, watched)
        except Exception:
            if not cut:
                raise
        if cut and not started:
            if cut == "timeout":
                await self._answer(send, 408, "upload_timeout",
                                   msg("doc.upload_timeout", seconds=math.ceil(read_timeout)))
            else:
                await self._answer(send, 413, "payload_too_large", msg("doc.upload_too_large"))


def upload_limit(app: Any) -> Any:
    """The API transformer: `app` with its upload route guarded."""
    return UploadLimit(app)
