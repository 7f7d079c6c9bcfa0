"""Uploads in flight through `POST /api/kb/documents` (issue 44, finding 2), with a real PocketBase: the body goes to
disk as it arrives (never whole in memory), a client that stops sending is cut off after the read timeout and
what it sent is gone, and one admin, or one tenant, has only so many uploads in flight."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tracemalloc

import httpx
import pytest

from r42_app.api import api
from tests.conftest import throwaway_user

pytestmark = pytest.mark.anyio
BOUNDARY = "r42-grens"
GUARD = 60.0  # an answer that has not come after this never comes
CHUNK = b"x" * (64 * 1024)


def head(filename: str) -> bytes:
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{filename}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()


TAIL = f"\r\n--{BOUNDARY}--\r\n".encode()


class Stalling:
    """A multipart body of one file: its head and `chunks` pieces of 64 KB, then nothing until `go` is set, then
    the end of the form."""

    def __init__(self, filename: str = "foto.png", chunks: int = 1):
        self.filename, self.chunks = filename, chunks
        self.stalled = asyncio.Event()
        self.go = asyncio.Event()

    async def __aiter__(self):
        yield head(self.filename)
        for _ in range(self.chunks):
            yield CHUNK
        self.stalled.set()
        await self.go.wait()
        yield TAIL


async def post(token: str, body, **headers: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
               **headers}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42", timeout=GUARD) as c:
        return await asyncio.wait_for(c.post("/api/kb/documents", content=body, headers=headers), GUARD)


def unnamed_upload_files() -> dict[str, int]:
    """The unnamed upload files this process holds open (the API runs in it here) and their sizes."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if "/uploads/incoming/" in target and target.endswith("(deleted)"):
                found[target] = os.stat(f"/proc/self/fd/{fd}").st_size
    return found


@pytest.fixture
def admin_token(pb_server, seeded):
    return pb_server.user("admin@example.com").token


async def test_an_upload_goes_to_disk_as_it_arrives_and_one_that_stalls_is_cut_off_and_removed(
        api_env, admin_token, monkeypatch):
    monkeypatch.setenv("R42_UPLOAD_READ_TIMEOUT_S", "3")
    body = Stalling("groot.pdf", chunks=128)  # 8 MB sent of a body that says 20 MB, then silence
    assert unnamed_upload_files() == {}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        upload = asyncio.ensure_future(post(admin_token, body, **{"Content-Length": str(20 * 1024 * 1024)}))
        await asyncio.wait_for(body.stalled.wait(), GUARD)
        held = tracemalloc.get_traced_memory()[0] - before
        on_disk = unnamed_upload_files()
    finally:
        tracemalloc.stop()
    assert len(on_disk) == 1 and sum(on_disk.values()) >= 7 * 1024 * 1024, on_disk  # the bytes are on disk
    assert held < 4 * 1024 * 1024, held  # ... and not in memory (8 MB were sent)
    cut = await upload
    assert cut.status_code == 408 and cut.json()["type"] == "upload_timeout"
    assert "3 seconden niets meer binnen" in cut.json()["message"]
    assert unnamed_upload_files() == {}  # what it sent is gone
    body.go.set()


async def test_a_third_upload_in_flight_of_one_admin_or_of_one_tenant_is_refused_with_429(
        api_env, pb_server, admin_pb, seeded, monkeypatch):
    monkeypatch.setenv("R42_UPLOADS_PER_TENANT", "3")  # R42_UPLOADS_PER_USER stays 2
    ann = pb_server.user("admin@example.com").token
    with throwaway_user(admin_pb, role="admin", prefix="beheer") as (email, _):
        bob = pb_server.user(email).token
        bodies = [Stalling(), Stalling(), Stalling()]
        in_flight = [asyncio.ensure_future(post(token, body)) for token, body in zip((ann, ann, bob), bodies)]
        await asyncio.wait_for(asyncio.gather(*(b.stalled.wait() for b in bodies)), GUARD)

        third = await post(ann, Stalling())  # ann's third
        assert third.status_code == 429 and third.json()["type"] == "uploads_busy"
        assert third.headers["Retry-After"] == "10" and "10 seconden" in third.json()["message"]
        tenant_full = await post(bob, Stalling())  # bob's second: the tenant's fourth
        assert tenant_full.status_code == 429
        acme = await post(pb_server.user("admin@acme.example").token, head("foto.png") + b"x" + TAIL)
        assert acme.status_code == 422  # another tenant's upload goes on (and is read: a picture is refused)

        for body in bodies:
            body.go.set()
        done = await asyncio.gather(*in_flight)
        assert [r.status_code for r in done] == [422, 422, 422]
        assert done[0].json()["files"][0]["code"] == "doc.unsupported"
        again = await post(ann, head("foto.png") + b"x" + TAIL)
        assert again.status_code == 422  # the slots were given back


async def test_an_admins_tab_gets_an_upload_permit_that_sign_out_or_a_learner_takes_away(app_env, pb_server, seeded):
    """The upload route reads nothing from a tab without a permit (r42_app/upload_limit.py); /admin/topics gives one
    to a signed-in admin's tab, for that admin and tenant, and nobody else's page load or a sign-out leaves one."""
    from reflex.istate.data import RouterData

    from r42_app.container import services
    from r42_app.services.uploads import permit_of
    from r42_app.state.admin_topics import AdminTopicListState
    from r42_app.state.auth import AuthState
    from tests.integration.test_state_guards import call, signed_in_root, substate

    async def tab(email: str, token: str):
        root = await signed_in_root(email)
        root.router = RouterData.from_router_data({"token": token, "pathname": "/admin/topics"})
        await call(substate(root, AdminTopicListState), AdminTopicListState.load_list)
        return substate(root, AuthState)

    shared = services().shared
    admin = await tab("admin@example.com", "tab-of-the-admin")
    permit = await permit_of(shared, "tab-of-the-admin")
    assert permit is not None and permit.user_id == admin.user_id
    assert permit.tenant_id == pb_server.admin_client().first("tenants", 'slug = "demo"')["id"]
    await call(admin, AuthState.sign_out)
    assert await permit_of(shared, "tab-of-the-admin") is None

    await tab("admin@example.com", "a-shared-computer")
    assert await permit_of(shared, "a-shared-computer") is not None
    await tab("learner@example.com", "a-shared-computer")  # the next person signs in in the same tab
    assert await permit_of(shared, "a-shared-computer") is None
