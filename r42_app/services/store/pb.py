"""A small, typed PocketBase REST client on httpx.

We talk to PocketBase's REST API directly rather than through the `pocketbase` SDK: the
SDK's batch helper is broken against server 0.40, and batch requests are how a write of many records stays
all-or-nothing (a graph edit, a topic's deletion, a document) or costs one request for many (BULK_BATCH below).
"""

from __future__ import annotations

import asyncio
import base64
import builtins  # PocketBase has a method named `list`: annotations in the class spell builtins.list
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

SUPERUSERS = "_superusers"
SUPERUSER_TOKEN_MAX_AGE_S = 3600.0  # PocketBase's default superuser token lasts a day; renew well before

# Sub-requests per `/api/batch` for bulk writes that need not be one transaction (a KB import's chunks, the question
# log, the outbox's bookkeeping, cost rows). PocketBase runs a batch's sub-requests one inside the other, and every JS
# request hook around a record write (pb_hooks/r42_sessions.pb.js, for every collection) keeps one of its pooled JS
# runtimes busy until the rest of the batch is done: past the pool (runtime/pb_server.py HOOKS_POOL) each hook built
# a runtime of its own. Imported in batches of 400 with the pool of 15, a topic cost 2.8 ms; in batches of 48 with
# the pool of 64, 0.9 ms (either change alone: 2.3-2.5 ms; docs/BENCHMARKS.md, Import). Writes that must be
# all-or-nothing (a graph edit, a topic's deletion, a document) still go in one batch (kb_store.BATCH_SIZE).
BULK_BATCH = 48


class PBError(Exception):
    """A PocketBase request failed; `status` is the HTTP status (0 when the server is unreachable)."""

    def __init__(self, status: int, message: str, data: Any = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.data = data or {}

    def field_errors(self) -> dict[str, str]:
        """Per-field messages PocketBase returned on a 400, if any."""
        out: dict[str, str] = {}
        for name, detail in (self.data or {}).items():
            if isinstance(detail, dict) and "message" in detail:
                out[name] = detail["message"]
        return out

    def __str__(self) -> str:
        fields = self.field_errors()
        if fields:
            return f"{self.message} ({'; '.join(f'{k}: {v}' for k, v in fields.items())})"
        return self.message


def pb_time(dt: datetime) -> str:
    """A datetime as PocketBase stores and compares it (UTC, `YYYY-MM-DD HH:MM:SS.mmmZ`)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.000Z")


def quote(value: str) -> str:
    """Quote a string for a PocketBase filter expression. Letters outside ASCII stay as they are: PocketBase's
    filter scanner reads no \\uXXXX escapes, so "één" quoted as "\\u00e9\\u00e9n" matched nothing."""
    return json.dumps(str(value), ensure_ascii=False)


@dataclass
class BatchRequest:
    """One sub-request of `/api/batch`."""

    method: str
    url: str
    body: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "url": self.url}
        if self.body is not None:
            out["body"] = self.body
        return out

    @classmethod
    def create(cls, collection: str, body: dict[str, Any]) -> BatchRequest:
        return cls("POST", f"/api/collections/{collection}/records", body)

    @classmethod
    def update(cls, collection: str, record_id: str, body: dict[str, Any]) -> BatchRequest:
        return cls("PATCH", f"/api/collections/{collection}/records/{record_id}", body)

    @classmethod
    def delete(cls, collection: str, record_id: str) -> BatchRequest:
        return cls("DELETE", f"/api/collections/{collection}/records/{record_id}")


class PocketBase:
    """One PocketBase connection, optionally authenticated (user token or superuser)."""

    def __init__(self, base_url: str, token: str = "", timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout)
        self._superuser: tuple[str, str] | None = None
        self._token_at = 0.0
        self._lock = threading.Lock()

    # -- plumbing -----------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def send(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None,
             files: dict[str, tuple[str, bytes]] | None = None, raw: bool = False,
             timeout: float | None = None) -> Any:
        """Send one request; re-authenticate a superuser once if its token expired, and before it gets old
        (PocketBase treats an expired token as a guest on some routes, and guests are rate limited).
        With `files` ({field: (filename, bytes)}) the request is multipart: `body` goes as PocketBase's
        `@jsonPayload`. With `raw` the response's bytes come back, not its JSON. `timeout` (seconds) replaces the
        client's own for this request (a long one: compacting the database after a forget)."""
        if self._superuser and time.monotonic() - self._token_at > SUPERUSER_TOKEN_MAX_AGE_S:
            self._login_superuser()
        extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        for attempt in (0, 1):
            headers = {"Authorization": self.token} if self.token else {}
            try:
                if files:
                    upload = [(key, (name, data, "application/octet-stream")) for key, (name, data) in files.items()]
                    resp = self._http.request(method, path, params=params, headers=headers, files=upload,
                                              data={"@jsonPayload": json.dumps(body, ensure_ascii=False)}, **extra)
                else:
                    resp = self._http.request(method, path, params=params, json=body, headers=headers, **extra)
            except httpx.HTTPError as exc:
                raise PBError(0, f"PocketBase at {self.base_url} is unreachable: {exc}") from exc
            if resp.status_code == 401 and self._superuser and attempt == 0:
                self._login_superuser()
                continue
            break
        if resp.status_code >= 400:
            try:
                payload = resp.json()
            except ValueError:
                payload = {"message": resp.text[:200]}
            raise PBError(resp.status_code, payload.get("message") or f"HTTP {resp.status_code}", payload.get("data"))
        if raw:
            return resp.content
        if resp.status_code == 204 or not resp.content:
            return None
        return resp.json()

    # -- auth ---------------------------------------------------------------------

    def auth_with_password(self, collection: str, identity: str, password: str) -> dict[str, Any]:
        """Sign in; on success this client carries the new token. Returns `{token, record}`."""
        data = self.send(
            "POST",
            f"/api/collections/{collection}/auth-with-password",
            body={"identity": identity, "password": password},
        )
        self.token = data["token"]
        return data

    def as_superuser(self, email: str, password: str) -> PocketBase:
        """Authenticate as superuser and keep the credentials to refresh an expired token."""
        self._superuser = (email, password)
        self._login_superuser()
        return self

    def _login_superuser(self) -> None:
        assert self._superuser is not None
        with self._lock:
            self._token_at = time.monotonic()  # first: the sign-in below goes through send() too
            self.auth_with_password(SUPERUSERS, *self._superuser)

    def me(self, collection: str = "users") -> dict[str, Any]:
        """The record this client's token signs in as (PocketBase checks the token; nothing is renewed)."""
        payload = (self.token or "").split(".")[1] if self.token and self.token.count(".") == 2 else ""
        try:
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))) if payload else {}
        except ValueError:
            claims = {}
        return self.send("GET", f"/api/collections/{collection}/records/{claims.get('id', '-')}")

    # -- records ------------------------------------------------------------------

    def list(
        self,
        collection: str,
        *,
        filter: str = "",
        sort: str = "",
        fields: str = "",
        page: int = 1,
        per_page: int = 200,
        expand: str = "",
        total: bool = False,
    ) -> dict[str, Any]:
        """One page of records; with `total`, the response also carries `totalItems`."""
        params: dict[str, Any] = {"page": page, "perPage": per_page, "skipTotal": 0 if total else 1}
        for key, value in (("filter", filter), ("sort", sort), ("fields", fields), ("expand", expand)):
            if value:
                params[key] = value
        return self.send("GET", f"/api/collections/{collection}/records", params=params)

    def iter_all(self, collection: str, *, filter: str = "", sort: str = "", fields: str = "",
                 expand: str = "") -> Iterator[dict[str, Any]]:
        """Every matching record, paging 1000 at a time (for large sorted reads, see `all_by_id`)."""
        page = 1
        while True:
            data = self.list(collection, filter=filter, sort=sort, fields=fields, expand=expand, page=page,
                             per_page=1000)
            items = data.get("items", [])
            yield from items
            if len(items) < 1000:
                return
            page += 1

    def all_by_id(self, collection: str, *, filter: str = "", fields: str = "") -> builtins.list[dict[str, Any]]:
        """Every matching record, 1000 at a time in id order (keyset paging: each page is an index range). Numbered
        pages with a sort make PocketBase sort everything again for every page: reading 100,000 topics sorted by
        label took 131 s that way. Sort the result in Python instead."""
        if fields and "id" not in fields.split(","):
            fields = f"{fields},id"
        records: list[dict[str, Any]] = []
        last = ""
        while True:
            flt = f"id > {quote(last)}" if last else ""
            if filter:
                flt = f"({filter}) && {flt}" if flt else filter
            items = self.list(collection, filter=flt, sort="id", fields=fields, per_page=1000).get("items", [])
            records.extend(items)
            if len(items) < 1000:
                return records
            last = items[-1]["id"]

    def all(self, collection: str, **kwargs: Any) -> builtins.list[dict[str, Any]]:
        return list(self.iter_all(collection, **kwargs))

    def first(self, collection: str, filter: str, **kwargs: Any) -> dict[str, Any] | None:
        items = self.list(collection, filter=filter, per_page=1, **kwargs).get("items", [])
        return items[0] if items else None

    def change_marker(self, collection: str, filter: str) -> tuple[int, str]:
        """(row count, newest `updated`) of the matching rows: changes on any create, update or delete."""
        page = self.list(collection, filter=filter, sort="-updated", fields="updated", per_page=1, total=True)
        items = page.get("items") or [{}]
        return int(page.get("totalItems", 0)), items[0].get("updated", "")

    def get(self, collection: str, record_id: str) -> dict[str, Any]:
        return self.send("GET", f"/api/collections/{collection}/records/{record_id}")

    def create(self, collection: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.send("POST", f"/api/collections/{collection}/records", body=body)

    def update(self, collection: str, record_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.send("PATCH", f"/api/collections/{collection}/records/{record_id}", body=body)

    def delete(self, collection: str, record_id: str) -> None:
        self.send("DELETE", f"/api/collections/{collection}/records/{record_id}")

    def batch(self, requests: builtins.list[BatchRequest],
              files: dict[int, dict[str, tuple[str, bytes]]] | None = None) -> builtins.list[dict[str, Any]]:
        """Run sub-requests in one transaction: all succeed or none is applied. `files` uploads files with some of
        them: {index of the request: {field: (filename, bytes)}}."""
        if not requests:
            return []
        parts = {f"requests.{i}.{field}": upload for i, fields in (files or {}).items()
                 for field, upload in fields.items()}
        result = self.send("POST", "/api/batch", body={"requests": [r.to_json() for r in requests]}, files=parts)
        return [item.get("body") for item in result]

    def file_bytes(self, collection: str, record_id: str, stored_name: str) -> bytes:
        """A stored file's bytes; a protected file with a file token of this (superuser) client."""
        token = self.send("POST", "/api/files/token")["token"]
        return self.send("GET", f"/api/files/{collection}/{record_id}/{stored_name}", params={"token": token},
                         raw=True)

    # -- admin --------------------------------------------------------------------

    def health(self) -> bool:
        try:
            self.send("GET", "/api/health")
            return True
        except PBError:
            return False


async def pocketbase_answers(url: str, timeout: float) -> bool:
    """PocketBase's health, within `timeout` whatever it does (stopped, hung, gone): an async request
    under a hard deadline, no thread that a hung server could hold."""
    try:
        async with httpx.AsyncClient(base_url=url, timeout=timeout) as client:
            resp = await asyncio.wait_for(client.get("/api/health"), timeout)
        return resp.status_code == 200
    except (TimeoutError, httpx.HTTPError):
        return False
