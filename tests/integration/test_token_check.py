"""API token checks (issue 14): cheap (cached briefly, one shared connection, expired tokens refused
without asking PocketBase), still honouring a revoked token within the cache window, and a flood of
one user refused before any PocketBase query."""

import base64
import json
import time

import pytest

import r42_app.services.store.auth as auth_module
from r42_app.services.runtime.shared_state import MemorySharedState, SharedRateLimiter
from r42_app.services.store.auth import AuthService
from tests.conftest import throwaway_user


def forged(token: str, **changes) -> str:
    """The same token with its payload changed (its signature no longer matches)."""
    head, payload, sig = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data.update(changes)
    raw = base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{head}.{raw}.{sig}"


@pytest.fixture
def someone(admin_pb, seeded, pb_server):
    with throwaway_user(admin_pb, name="Token Test", prefix="token") as (email, row):
        yield email, row, pb_server.user(email).token


def test_a_checked_token_is_remembered_briefly_and_a_revoked_one_refused_after(pb_server, admin_pb, someone,
                                                                              monkeypatch):
    email, row, token = someone
    monkeypatch.setattr(auth_module, "CHECK_CACHE_S", 0.5)
    auth = AuthService(pb_server.url)
    calls = []
    real = auth._shared().get
    monkeypatch.setattr(auth._shared(), "get", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert auth.check(token).user.email == email
    assert auth.check(token).user.email == email and len(calls) == 1  # the second answer came from the cache
    admin_pb.update("users", row["id"], {"password": "een-nieuw-wachtwoord", "passwordConfirm": "een-nieuw-wachtwoord"})
    time.sleep(0.6)
    assert auth.check(token) is None  # revoked: refused once the short cache window has passed
    assert auth.check(token, fresh=True) is None


def test_expired_and_forged_tokens_are_refused(pb_server, someone, monkeypatch):
    _email, _row, token = someone
    auth = AuthService(pb_server.url)
    calls = []
    real = auth._shared().get
    monkeypatch.setattr(auth._shared(), "get", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert auth.check(forged(token, exp=int(time.time()) - 10)) is None and calls == []  # no PocketBase call
    assert auth.check("not.a.jwt") is None and auth.check("") is None and calls == []
    assert auth.check(forged(token, exp="morgen")) is None and calls == []  # a malformed expiry: refused, no error
    admin = auth.check(forged(token, id=_row_of(pb_server, "admin@example.com")["id"]))
    assert admin is None  # someone else's id with this signature: PocketBase does not accept it


def _row_of(pb_server, email):
    return pb_server.admin_client().first("users", f'email = "{email}"')


def test_a_flood_is_refused_before_any_pocketbase_query():
    import asyncio

    from r42_app.chat.turn import ChatDeps, ChatRefused, check_turn
    from r42_app.core.identity import SignedInUser

    class Counting:
        """The turn's guard (TurnGuards), counting its PocketBase reads."""

        def __init__(self):
            self.calls = 0

        async def read_guards(self, user, token=""):
            self.calls += 1
            raise AssertionError("no query for a refused flood")

    async def flood_then_one_more():
        for _ in range(4):
            assert await limiter.check("u1") == 0
        with pytest.raises(ChatRefused) as refused:
            await check_turn(user, deps)
        return refused.value.kind, await limiter.check("someone-else")

    guards = Counting()
    limiter = SharedRateLimiter(MemorySharedState(), "chat", per_minute=12, burst=4)
    deps = ChatDeps(retriever=None, kb=None, llm=None, guards=guards, limiter=limiter)
    user = SignedInUser("u1", "a@b", "A", "learner", "t1", "demo", "Demo")
    assert asyncio.run(flood_then_one_more()) == ("rate_limited", 0.0)  # others are not held up
    assert guards.calls == 0


def test_three_hundred_at_once_run_the_lookups_only_for_the_burst_and_a_refused_turn_gives_its_token_back():
    import asyncio
    import time as _time

    from r42_app.chat.turn import ChatDeps, ChatRefused, check_turn
    from r42_app.core.identity import SignedInUser

    from r42_app.core.capabilities import DEFAULT_CAPABILITIES, Resolution
    from r42_app.core.costs import TenantCredits
    from r42_app.services.store.access import GuardReading, TenantChatbot

    class Slow:
        """PocketBase taking 40 ms per guard read (in a thread, as AccessStore's): every request that passed a mere
        peek would run one."""

        def __init__(self, quiz: bool = False):
            self.calls = 0
            self.quiz = quiz

        def _read(self):
            self.calls += 1
            _time.sleep(0.04)
            chatbot = TenantChatbot(True, DEFAULT_CAPABILITIES, TenantCredits(1000.0))
            return GuardReading(chatbot, Resolution(DEFAULT_CAPABILITIES, "default"), self.quiz)

        async def read_guards(self, user, token=""):
            return await asyncio.to_thread(self._read)

    async def flood(deps, user, n):
        results = await asyncio.gather(*(check_turn(user, deps) for _ in range(n)), return_exceptions=True)
        return [r.kind if isinstance(r, ChatRefused) else "ok" for r in results]

    user = SignedInUser("u1", "a@b", "A", "learner", "t1", "demo", "Demo")
    def limiter():
        return SharedRateLimiter(MemorySharedState(), "chat", per_minute=12, burst=4)

    slow = Slow()
    kinds = asyncio.run(flood(ChatDeps(retriever=None, kb=None, llm=None, guards=slow, limiter=limiter()), user, 300))
    assert kinds.count("ok") == 4 and kinds.count("rate_limited") == 296
    assert slow.calls == 4  # one guard read for each of the 4 admitted turns, none for the 296

    async def refused_then_again(deps):
        first = await flood(deps, user, 10)
        return first, await flood(deps, user, 4)

    in_quiz = Slow(quiz=True)
    deps = ChatDeps(retriever=None, kb=None, llm=None, guards=in_quiz, limiter=limiter())
    first, again = asyncio.run(refused_then_again(deps))
    assert first == ["quiz_active"] * 4 + ["rate_limited"] * 6
    assert again == ["quiz_active"] * 4  # the refused turns took nothing: the bucket is full again


@pytest.mark.anyio
async def test_many_requests_of_a_token_not_checked_lately_ask_pocketbase_once(api_env, someone, monkeypatch):
    """A flood with a token whose check is no longer remembered: one PocketBase check for all the requests that
    arrive while it runs, and every one of them gets the same answer (issue 26)."""
    import asyncio

    import httpx

    from r42_app import container
    from r42_app.api import api

    _email, _row, token = someone
    auth = container.services().auth
    calls = []
    real = auth.checks

    def counted(tokens):
        calls.extend(tokens)
        time.sleep(0.2)  # PocketBase slow enough for every request to arrive while the first check runs
        return real(tokens)

    monkeypatch.setattr(auth, "checks", counted)
    auth._token_checks.run_batch = counted

    async def flood():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
            forged_one = forged(token, name="x")
            many = [client.post("/api/chat", json={"messages": [{"role": "user", "content": "hoi"}]},
                                headers={"Authorization": f"Bearer {tok}"})
                    for tok in [token] * 30 + [forged_one] * 5]
            return await asyncio.gather(*many)

    answers = await flood()
    assert calls.count(token) == 1 and len(calls) == 2  # one check per token, not one per request
    assert {r.status_code for r in answers[:30]} <= {200, 429} and answers[0].status_code != 401
    assert [r.status_code for r in answers[30:]] == [401] * 5  # a forged token's check is its own, and refused


@pytest.mark.anyio
async def test_first_questions_of_many_learners_at_once_share_a_few_token_checks(api_env, admin_pb, seeded, pb_server):
    """A training day: learners whose tokens were not checked lately ask at once. Their tokens are checked
    together in a few PocketBase requests (not one each), every learner is answered as themself, and a forged or
    revoked token among them is refused on its own."""
    import asyncio
    from contextlib import ExitStack

    import httpx

    from r42_app import container
    from r42_app.api import api

    auth = container.services().auth
    with ExitStack() as stack:
        people = [stack.enter_context(throwaway_user(admin_pb, name=f"Dag {i}", prefix=f"day{i}")) for i in range(12)]
        tokens = [pb_server.user(email).token for email, _row in people]
        revoked_email, revoked_row = people[-1]
        admin_pb.update("users", revoked_row["id"], {"password": "een-nieuw-wachtwoord",
                                                     "passwordConfirm": "een-nieuw-wachtwoord"})
        batches_before = auth._token_checks.batches

        async def ask_all():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
                return await asyncio.gather(*(client.post("/api/quiz/end", json={}, headers={
                    "Authorization": f"Bearer {tok}"}) for tok in [*tokens, forged(tokens[0], name="x")]))

        answers = await ask_all()
        assert [r.status_code for r in answers[:11]] == [200] * 11
        assert answers[11].status_code == 401  # its password changed after the token was made
        assert answers[12].status_code == 401  # forged
        assert auth._token_checks.batches - batches_before <= 3  # 13 tokens, not 13 requests
        for (email, row), tok in zip(people[:11], tokens[:11], strict=True):
            session = auth.remembered(tok)
            assert session is not None and session.user.email == email and session.user.id == row["id"]
            assert session.user.tenant_slug == "demo" and session.user.tenant_name
        assert auth.remembered(tokens[11]) is None


def test_only_the_superuser_may_check_tokens(pb_server, someone):
    _email, _row, token = someone
    import httpx

    for headers in ({"Authorization": token}, {}):
        resp = httpx.post(f"{pb_server.url}/api/r42/token-checks", json={"tokens": [token]}, headers=headers)
        assert resp.status_code in (401, 403), resp.text
    admin = pb_server.admin_client()
    for bad in ({}, {"tokens": []}, {"tokens": "x"}, {"tokens": ["t"] * 201}):
        with pytest.raises(Exception) as refused:
            admin.send("POST", "/api/r42/token-checks", body=bad)
        assert getattr(refused.value, "status", 0) == 400
    assert admin.send("POST", "/api/r42/token-checks", body={"tokens": [token, "garbage", 5]})["results"][1:] == \
        [{"error": 401}, {"error": 401}]


def test_the_cost_route_and_the_secrets_refuse_a_learner_and_bad_bodies(pb_server, someone):
    """A learner's token straight against PocketBase: it cannot write cost events (or debit credits) through the
    route, nor read or write the app's secrets; malformed JSON is a 400 for the superuser too."""
    import httpx

    _email, _row, token = someone
    event = {"events": [{"event": {"id": "learnerwrite001", "tenant": "x", "credits": -1e9}, "rollup": "r"}],
             "day": "2026-12-03"}
    for headers in ({"Authorization": token}, {}):
        resp = httpx.post(f"{pb_server.url}/api/r42/cost-events", json=event, headers=headers)
        assert resp.status_code in (401, 403), resp.text
        assert httpx.get(f"{pb_server.url}/api/collections/app_secrets/records", headers=headers).status_code == 403
        made = httpx.post(f"{pb_server.url}/api/collections/app_secrets/records", json={"name": "x", "value": "y" * 20},
                          headers=headers)
        assert made.status_code in (400, 403), made.text
    admin = pb_server.admin_client()
    garbled = httpx.post(f"{pb_server.url}/api/r42/cost-events", content=b"{not json",
                         headers={"Authorization": admin.token, "Content-Type": "application/json"})
    assert garbled.status_code == 400


def test_a_dead_pocketbase_is_unavailable_not_a_wrong_token(someone):
    """Tokens checked together while PocketBase is down: the API answers 503 (AuthError), never a 401 that would
    sign a learner out."""
    import asyncio

    from r42_app.services.store.auth import AuthError
    from r42_app.services.store.pb import PocketBase

    _email, _row, token = someone
    dead = PocketBase("http://127.0.0.1:9", timeout=0.5)
    auth = AuthService("http://127.0.0.1:9", admin=dead)
    with pytest.raises(AuthError):
        asyncio.run(auth.check_soon(token))
