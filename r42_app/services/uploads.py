"""Uploads in flight: who may send one, how many at once, and where the bytes go (issue 44).

- **Permits.** Reflex's upload route (`/_upload`, "Documenten toevoegen") names the browser tab that sends
  (`Reflex-Client-Token`) but carries no sign-in: its handler checks the admin only after the whole body has
  arrived. So /admin/topics, loaded by a signed-in admin (checked with PocketBase), puts a permit for its tab in
  the shared state: the tab's client token -> the admin's user and tenant, for as long as a sign-in lasts; it
  goes at sign-out, and when the page is loaded by anyone who is not an admin. r42_app/upload_limit.py refuses
  an upload without one before it reads a byte. The browser cannot make one: only the server writes it, for
  the token of the websocket session a signed-in admin holds (whoever knows another tab's token holds its
  whole session anyway).
- **Slots.** One user sends at most R42_UPLOADS_PER_USER uploads at once and one tenant R42_UPLOADS_PER_TENANT,
  counted in the shared state (over every backend worker); a slot runs out after SLOT_TTL_S unless its
  holder renews it, so a worker that dies mid-upload keeps it at most that long. One more is refused with 429.
- **Receiving** `POST /api/kb/documents` (`receive_form`): the multipart body is parsed while it arrives and
  each file goes straight into an unnamed temporary file in the data dir (`uploads/incoming`; never /tmp,
  which may be memory): at most about a megabyte of it is in memory at a time. A body that sends nothing for
  R42_UPLOAD_READ_TIMEOUT_S, or more than its limit, is cut off, and its files are closed, so gone (an unnamed
  file leaves nothing behind, not even when the worker is killed).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from r42_app.services.runtime.shared_state import SharedState, SharedStateUnavailable

log = logging.getLogger(__name__)

PERMIT = "upload"  # the shared state's owner kind: client token -> [user id, tenant id]
SLOT_TTL_S = 60.0  # a slot not renewed for this long is free again (a worker that died)
RENEW_EVERY_S = 20.0
RETRY_AFTER_S = 10  # what a refused upload is told to wait (uploads take as long as they take)
FLUSH_BYTES = 1024 * 1024  # file bytes gathered in memory before they are written out
FIELD_BYTES = 1024  # a form field that is not a file (`type`) is short


@dataclass(frozen=True)
class Permit:
    user_id: str
    tenant_id: str


async def grant_permit(shared: SharedState, client_token: str, user_id: str, tenant_id: str, ttl: float) -> None:
    """The tab `client_token` may upload, as this admin of this tenant, for `ttl` seconds."""
    if client_token:
        await shared.claim(PERMIT, client_token, json.dumps([user_id, tenant_id]), ttl)


async def revoke_permit(shared: SharedState, client_token: str) -> None:
    if client_token and (held := await shared.owner(PERMIT, client_token)) is not None:
        await shared.release(PERMIT, client_token, held)


async def keep_permit(shared: SharedState, client_token: str, user: Any, ttl: float) -> None:
    """The tab's permit as its page sees the user (a SignedInUser or None): granted for `ttl` seconds to an admin
    of a tenant, revoked for anyone else. A shared state that cannot be reached is logged: the upload route
    then refuses (503) rather than read."""
    try:
        if user is not None and user.is_admin and user.tenant_id:
            await grant_permit(shared, client_token, user.id, user.tenant_id, ttl)
        else:
            await revoke_permit(shared, client_token)
    except SharedStateUnavailable as exc:
        log.warning("the upload permit of a tab could not be kept: %s", exc)


async def permit_of(shared: SharedState, client_token: str) -> Permit | None:
    """The tab's permit, or None. Raises SharedStateUnavailable while the shared state cannot be reached."""
    raw = await shared.owner(PERMIT, client_token) if client_token else None
    try:
        user_id, tenant_id = json.loads(raw) if raw else (None, None)
    except (ValueError, TypeError):
        return None
    if isinstance(user_id, str) and isinstance(tenant_id, str) and user_id and tenant_id:
        return Permit(user_id, tenant_id)
    return None


def slot_limits(user_id: str, tenant_id: str, per_user: int, per_tenant: int, tab: str = "") -> dict[str, int]:
    """The slot keys of an upload and how many holders each allows: its user's, its tenant's and, for an upload
    from a browser tab, the tab's (one at a time: a tab's token is no way to more uploads than its user may)."""
    limits = {f"upload:user:{user_id}": per_user, f"upload:tenant:{tenant_id}": per_tenant}
    if tab:
        limits[f"upload:tab:{tab}"] = 1
    return limits


async def uploads_busy(shared: SharedState, user_id: str, tenant_id: str, per_user: int, per_tenant: int,
                       tab: str) -> bool:
    """Whether an upload the tab sends now would be refused (429), for the page to say so: no slot free for the
    user or the tenant, and the tab's own upload is not already in (it may arrive before the page asks)."""
    if not await shared.slots_free({f"upload:tab:{tab}": 1}, ""):
        return False
    return not await shared.slots_free(slot_limits(user_id, tenant_id, per_user, per_tenant), "")


@contextlib.asynccontextmanager
async def upload_slots(shared: SharedState, limits: dict[str, int], holder: str, ttl: float = SLOT_TTL_S,
                       renew_every: float = RENEW_EVERY_S) -> AsyncIterator[bool]:
    """A slot under every key of `limits` for `holder` while the block runs (True), renewed every `renew_every`
    seconds and given back after; False (nothing taken) when one of the keys is full."""
    if not await shared.take_slots(limits, holder, ttl):
        yield False
        return
    keys = list(limits)

    async def renew() -> None:
        while True:
            await asyncio.sleep(renew_every)
            try:
                if not await shared.renew_slots(keys, holder, ttl):  # ran out (Redis lost it): take it again
                    await shared.take_slots(limits, holder, ttl)
            except Exception as exc:  # noqa: BLE001 - the upload goes on; its slot runs out at worst
                log.warning("renewing upload slots failed: %s", exc)

    renewing = asyncio.create_task(renew())
    try:
        yield True
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing
        try:
            await shared.release_slots(keys, holder)
        except Exception as exc:  # noqa: BLE001 - they run out on their own
            log.warning("giving back upload slots failed: %s", exc)


# -- receiving a body -------------------------------------------------------------------------------------------


class UploadCut(Exception):
    """The body did not arrive whole: `kind` timeout (nothing for the read timeout), too_large, disconnected
    (the client went away), too_many_files, or invalid (not multipart/form-data, too many fields)."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(detail or kind)
        self.kind = kind


async def timed_chunks(receive: Callable[[], Awaitable[MutableMapping[str, Any]]], timeout: float,
                       limit: int) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; UploadCut when nothing comes for `timeout` seconds, when it passes
    `limit` bytes, or when the client goes away."""
    seen = 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), timeout)
        except TimeoutError:
            raise UploadCut("timeout", f"nothing for {timeout:.0f} s after {seen} bytes") from None
        if message["type"] == "http.disconnect":
            raise UploadCut("disconnected")
        body = message.get("body", b"")
        seen += len(body)
        if seen > limit:
            raise UploadCut("too_large", f"over {limit} bytes")
        if body:
            yield body
        if not message.get("more_body", False):
            return


@dataclass
class ReceivedFile:
    """A file of the form: its name as sent, and its bytes in an unnamed temporary file."""

    filename: str
    size: int = 0
    file: IO[bytes] | None = None

    def read(self) -> bytes:
        """The whole file (blocking: call it in a thread)."""
        if self.file is None:
            return b""
        self.file.seek(0)
        return self.file.read()


@dataclass
class ReceivedForm:
    fields: dict[str, str] = field(default_factory=dict)
    files: list[ReceivedFile] = field(default_factory=list)

    def close(self) -> None:
        """Close (and so delete) every file."""
        for received in self.files:
            if received.file is not None:
                received.file.close()
                received.file = None


def incoming_dir(data_dir: Path) -> Path:
    return data_dir / "uploads" / "incoming"


def _write_out(folder: Path, pending: list[tuple[ReceivedFile, bytes]]) -> None:
    for received, data in pending:
        if received.file is None:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            received.file = tempfile.TemporaryFile(dir=folder)  # unnamed: gone when closed or the process dies
        received.file.write(data)


async def receive_form(receive: Callable[[], Awaitable[MutableMapping[str, Any]]], content_type: str, folder: Path, *,
                       timeout: float, limit: int, max_files: int, max_fields: int) -> ReceivedForm:
    """A multipart/form-data body, parsed as it arrives: fields as text (FIELD_BYTES each at most), files in
    unnamed temporary files in `folder` (written out in a thread, FLUSH_BYTES at a time). Raises UploadCut
    (see timed_chunks; too_many_files past `max_files`; invalid for a body that is not multipart or has more
    than `max_fields` fields); whatever it received is closed, so removed, before it raises."""
    kind, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UploadCut("invalid", "not multipart/form-data")
    charset = params.get(b"charset", b"utf-8").decode("latin-1")
    form = ReceivedForm()
    pending: list[tuple[ReceivedFile, bytes]] = []
    part: dict[str, Any] = {}
    header = [b"", b""]

    def text(raw: bytes) -> str:
        try:
            return raw.decode(charset)
        except (LookupError, UnicodeDecodeError):
            return raw.decode("latin-1")

    def on_part_begin() -> None:
        part.clear()
        part.update(disposition=b"", file=None, data=bytearray(), name="")

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header[0] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header[1] += data[start:end]

    def on_header_end() -> None:
        if header[0].lower() == b"content-disposition":
            part["disposition"] = header[1]
        header[0] = header[1] = b""

    def on_headers_finished() -> None:
        _, options = parse_options_header(part["disposition"])
        if b"name" not in options:
            raise UploadCut("invalid", "a part without a name")
        part["name"] = text(options[b"name"])
        if b"filename" in options:
            if len(form.files) >= max_files:
                raise UploadCut("too_many_files", f"more than {max_files} files")
            part["file"] = ReceivedFile(text(options[b"filename"]))
            form.files.append(part["file"])
        elif len(form.fields) >= max_fields:
            raise UploadCut("invalid", f"more than {max_fields} fields")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        received = part["file"]
        if received is None:
            part["data"] += data[start:end]
            if len(part["data"]) > FIELD_BYTES:
                raise UploadCut("invalid", "a field longer than a field may be")
        else:
            received.size += end - start
            pending.append((received, data[start:end]))

    def on_part_end() -> None:
        if part["file"] is None:
            form.fields.setdefault(part["name"], text(bytes(part["data"])))
        elif part["file"].size == 0:
            pending.append((part["file"], b""))  # an empty file is a file too

    parser = MultipartParser(boundary, {
        "on_part_begin": on_part_begin, "on_part_data": on_part_data, "on_part_end": on_part_end,
        "on_header_field": on_header_field, "on_header_value": on_header_value, "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished})
    try:
        async for chunk in timed_chunks(receive, timeout, limit):
            parser.write(chunk)
            if sum(len(data) for _, data in pending) >= FLUSH_BYTES:
                await asyncio.to_thread(_write_out, folder, pending[:])
                pending.clear()
        parser.finalize()
        await asyncio.to_thread(_write_out, folder, pending[:])
        pending.clear()
    except FormParserError as exc:
        form.close()
        raise UploadCut("invalid", str(exc)) from None
    except BaseException:
        form.close()
        raise
    return form

