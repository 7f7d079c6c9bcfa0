"""One token's flood of chat requests (issue 26): the served app answers it 429 before any of it is read, with
the guard's own Dutch reason and the security headers, and another user's chat is answered meanwhile."""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import DEMO_PASSWORD

FLOOD_TOKEN = "not-a-token-but-a-flood"  # the gate counts a token before anything checks it


async def flood(url: str, n: int) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=n)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        return await asyncio.gather(*(client.post(f"{url}/api/chat", headers={"Authorization": f"Bearer {FLOOD_TOKEN}"},
                                                  json={"messages": [{"role": "user", "content": "spam"}]})
                                      for _ in range(n)))


def test_a_flood_is_refused_at_the_gate_and_another_user_still_chats(served_app, claude):
    # this app's limit: a burst of 50 (tests/e2e/conftest.py), so the gate lets 100 of one token through
    with ThreadPoolExecutor(1) as pool:  # a loop of its own: Playwright's sync API may hold this thread's
        answers = pool.submit(asyncio.run, flood(served_app.url, 160)).result()
    statuses = [a.status_code for a in answers]
    assert set(statuses) == {401, 429}, statuses  # the app said what it thinks of the token, the gate the rest
    assert statuses.count(401) <= 100 + 10  # twice the burst, and what refilled while the flood went in
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.json()["type"] == "rate_limited" and "Wacht even" in refused.json()["message"]
    assert int(refused.headers["retry-after"]) >= 1
    assert "default-src" in refused.headers["content-security-policy"]  # the gate sits inside the headers
    token = httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "learner@example.com", "password": DEMO_PASSWORD}).json()["token"]
    claude.reply_text("De AOW is het basispensioen.")
    resp = httpx.post(f"{served_app.url}/api/chat", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                      json={"messages": [{"role": "user", "content": "Wat is de AOW?"}], "mode": "fts"})
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1]["type"] == "done"
