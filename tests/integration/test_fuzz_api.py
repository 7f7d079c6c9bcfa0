"""Random and hostile bodies for the HTTP API (issue 14): never a 500, never a traceback, never a stream
cut without an `error` or `done`, and nothing written for a refused request."""

import asyncio
import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from r42_app.api import api
from r42_app.container import services
from tests.conftest import examples
from tests.unit.test_fuzz import json_values

OK_STATUSES = {200, 400, 401, 402, 403, 404, 409, 410, 413, 422, 423, 429}
raw_bodies = (json_values.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"))
              | st.binary(max_size=200)
              | st.sampled_from([b"", b"{", b"[" * 5000, b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
                                 b'{"messages": "x"}', b"\xff\xfe", b'{"delta": {"topics": [1]}}',
                                 b'{"id": "x", "decision": "allow"}']))


@pytest.fixture
def token(pb_server, seeded):
    return pb_server.user("learner@acme.example").token


async def post(path, body, token):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.post(path, content=body, headers={"Authorization": f"Bearer {token}",
                                                               "content-type": "application/json"})


@pytest.mark.anyio
@pytest.mark.hypothesis  # its @given is inside (it runs in a thread beside the test's loop): `make test-deep` takes it
async def test_random_bodies_never_break_the_api(api_env, token, admin_pb, caplog, monkeypatch):
    monkeypatch.setattr(services().rate_limiter, "burst", 10_000)  # the limiter is tested elsewhere
    monkeypatch.setattr(services().rate_limiter, "rate", 10_000.0)
    suggestions_before = len(admin_pb.all("suggestions"))
    seen: list[tuple[str, int]] = []

    # Every route gets its share of the bodies: drawn from all four at once, a small run may never reach one.
    @settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
    @given(raw_bodies)
    def check_one(path, body):
        resp = asyncio.run_coroutine_threadsafe(post(path, body, token), loop).result(60)
        seen.append((path, resp.status_code))
        assert resp.status_code in OK_STATUSES, (path, body[:200], resp.status_code, resp.text[:300])
        if resp.status_code == 200 and path == "/api/chat":
            events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
            assert events and events[-1]["type"] in ("done", "error"), resp.text[-300:]

    def check():
        for path in ("/api/chat", "/api/chat/delta", "/api/chat/confirm", "/api/quiz/end"):
            check_one(path)

    loop = asyncio.get_running_loop()
    await asyncio.to_thread(check)
    assert "Traceback" not in caplog.text
    # nothing a learner of acme sent was filed (a valid delta from a fuzzer is astronomically unlikely)
    assert len(admin_pb.all("suggestions")) == suggestions_before
    assert {p for p, _ in seen} == {"/api/chat", "/api/chat/delta", "/api/chat/confirm", "/api/quiz/end"}
