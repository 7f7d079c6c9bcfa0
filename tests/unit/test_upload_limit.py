"""The guard in front of Reflex's upload route (r42_app/upload_limit.py): a tab without an upload permit is refused
before a byte of its body is read; a body too large is refused, declared or streamed; a user, a tenant and a tab
have only so many uploads in flight; a body that stops coming is cut off after the read timeout."""

import asyncio

import httpx
import pytest
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response

from r42_app.services.runtime.shared_state import MemorySharedState
from r42_app.services.uploads import grant_permit, revoke_permit
from r42_app.upload_limit import UploadLimit

pytestmark = pytest.mark.anyio
GUARD = 10.0  # an answer that does not come within this is taken as never coming


class Inner:
    """Stands in for Reflex's upload route: reads the whole body, the way Starlette reads a form."""

    def __init__(self):
        self.called = 0

    async def __call__(self, scope, receive, send):
        self.called += 1
        size = 0
        try:
            async for chunk in Request(scope, receive).stream():
                size += len(chunk)
        except ClientDisconnect:  # Reflex answers a client that went away with an empty 200
            await Response()(scope, receive, send)
            return
        await PlainTextResponse(str(size))(scope, receive, send)


class Body:
    """A request body: `chunks` pieces of `size` bytes, then (when `stall`) nothing until `go` is set."""

    def __init__(self, chunks: int = 1, size: int = 100, stall: bool = False):
        self.chunks, self.size, self.stall = chunks, size, stall
        self.sent = 0
        self.stalled = asyncio.Event()
        self.go = asyncio.Event()

    async def __aiter__(self):
        for _ in range(self.chunks):
            self.sent += self.size
            yield b"x" * self.size
        if self.stall:
            self.stalled.set()
            await self.go.wait()


@pytest.fixture
def shared():
    return MemorySharedState()


def guard(shared, inner=None, **kw):
    kw = {"limit": 1000, "per_user": 2, "per_tenant": 3, "read_timeout": 30.0, **kw}
    return UploadLimit(inner or Inner(), shared=shared, **kw)


async def post(app, body, tab="tab-1", path="/_upload", **headers):
    headers = {"reflex-client-token": tab, **headers} if tab else headers
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://r42") as c:
        return await asyncio.wait_for(c.post(path, content=body, headers=headers), GUARD)


async def test_without_a_permit_the_answer_comes_before_any_of_the_body_is_read(shared):
    inner = Inner()
    app = guard(shared, inner, limit=200 * 1024 * 1024)
    body = Body(chunks=1, stall=True)  # says 100 MB, has 100 bytes to send and then never more
    for tab in ("", "tab-without-permit"):
        refused = await post(app, body, tab=tab, **{"content-length": str(100 * 1024 * 1024)})
        assert refused.status_code == 401 and "beheerder" in refused.json()["message"]
    assert body.sent == 0 and inner.called == 0
    await grant_permit(shared, "tab-1", "u1", "t1", ttl=60)
    await revoke_permit(shared, "tab-1")  # signed out
    assert (await post(app, Body(), tab="tab-1")).status_code == 401


async def test_a_body_over_the_limit_is_refused_with_a_dutch_reason(shared):
    await grant_permit(shared, "tab-1", "u1", "t1", ttl=60)
    app = guard(shared)
    too_large = await post(app, b"x" * 1001)
    assert too_large.status_code == 413 and "te groot" in too_large.json()["message"]
    assert (await post(app, b"x" * 1000)).text == "1000"
    streamed = await post(app, Body(chunks=5, size=300))  # no Content-Length: cut off once past the limit
    assert streamed.status_code == 413 and "te groot" in streamed.json()["message"]


async def test_a_third_upload_of_a_user_or_a_tab_in_flight_is_refused_with_429(shared):
    for tab, user in (("tab-1", "ann"), ("tab-2", "ann"), ("tab-3", "ann"), ("tab-4", "bob"), ("tab-5", "cas")):
        await grant_permit(shared, tab, user, "t1", ttl=60)
    app = guard(shared)
    first, second = Body(stall=True), Body(stall=True)
    in_flight = [asyncio.create_task(post(app, body, tab=tab)) for body, tab in ((first, "tab-1"), (second, "tab-2"))]
    await asyncio.wait_for(asyncio.gather(first.stalled.wait(), second.stalled.wait()), GUARD)
    third = await post(app, Body(), tab="tab-3")  # ann's third
    assert third.status_code == 429 and third.headers["retry-after"] == "10"
    assert "tegelijk" in third.json()["message"] and "10 seconden" in third.json()["message"]
    assert (await post(app, Body(), tab="tab-1")).status_code == 429  # one tab, one upload at a time
    bob = Body(stall=True)
    in_flight.append(asyncio.create_task(post(app, bob, tab="tab-4")))  # the tenant's third
    await asyncio.wait_for(bob.stalled.wait(), GUARD)
    assert (await post(app, Body(), tab="tab-5")).status_code == 429  # cas's first: the tenant is full
    for body in (first, second, bob):
        body.go.set()
    assert [r.status_code for r in await asyncio.gather(*in_flight)] == [200, 200, 200]
    assert (await post(app, Body(), tab="tab-3")).text == "100"  # the slots were given back


async def test_a_body_that_stops_coming_is_cut_off_after_the_read_timeout_and_its_slot_freed(shared):
    await grant_permit(shared, "tab-1", "ann", "t1", ttl=60)
    app = guard(shared, per_user=1, read_timeout=0.5)
    stalled = Body(chunks=2, stall=True)
    cut = await post(app, stalled)  # never sends the rest: without a read timeout this never answers
    assert cut.status_code == 408 and "niets meer binnen" in cut.json()["message"]
    assert stalled.sent == 200
    assert (await post(app, Body())).text == "100"  # its slot (the user's only one) is free again


async def test_once_the_body_is_in_a_long_answer_is_not_taken_for_a_stalled_client(shared):
    """Reflex streams the upload's answer while it listens for the client going away: that wait is no stalled body."""
    async def answers_slowly(scope, receive, send):
        async for _ in Request(scope, receive).stream():
            pass
        try:
            gone = await asyncio.wait_for(receive(), 1.0)  # the handler runs; the client stays
        except TimeoutError:
            gone = None
        await PlainTextResponse("weg" if gone else "gebleven")(scope, receive, send)

    await grant_permit(shared, "tab-1", "ann", "t1", ttl=60)
    answer = await post(guard(shared, answers_slowly, read_timeout=0.3), Body())
    assert answer.status_code == 200 and answer.text == "gebleven"


async def test_other_routes_are_not_guarded(shared):
    assert (await post(guard(shared), b"x" * 5000, tab="", path="/api/chat")).text == "5000"
