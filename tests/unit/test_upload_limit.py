"""The cap on Reflex's upload route: a body too large is refused before the app reads it, streamed or declared."""

import httpx
import pytest

from r42_app.upload_limit import UploadLimit

pytestmark = pytest.mark.anyio


async def echo(scope, receive, send):
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(size).encode()})


async def post(path, body, **headers):
    app = UploadLimit(echo, limit=1000)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://r42") as c:
        return await c.post(path, content=body, headers=headers)


async def test_a_body_over_the_limit_is_refused_with_a_dutch_reason():
    too_large = await post("/_upload", b"x" * 1001)
    assert too_large.status_code == 413 and "te groot" in too_large.json()["message"]
    assert (await post("/_upload", b"x" * 1000)).text == "1000"


async def test_a_streamed_body_is_cut_off_at_the_limit():
    async def chunks():
        for _ in range(5):
            yield b"x" * 300

    assert (await post("/_upload", chunks())).status_code == 413


async def test_other_routes_are_not_capped():
    assert (await post("/api/chat", b"x" * 5000)).text == "5000"
