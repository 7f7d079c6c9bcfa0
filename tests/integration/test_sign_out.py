"""Issue 44, finding 8: sign-out means signed out. "Afmelden" ends that session's token and "Overal afmelden" every
token of the user, tested where it counts: PocketBase's own REST API (and its realtime), the app's `POST /api/chat`
inside its token cache's 15 s, and another tab's session cache inside its 30 s. And a user moved to another tenant is
not answered from the old one at the next question. Real PocketBase with our migrations and pb_hooks; the sign-outs
go through the same event handlers the account menu calls."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest
import reflex as rx

from r42_app.core.messages import msg
from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
from r42_app.services.store.access import AccessStore, GuardReading
from r42_app.services.store.auth import AuthService
from r42_app.services.store.pb import PBError, PocketBase, pb_time
from r42_app.state.auth import AuthState
from tests.conftest import DEMO_PASSWORD, free_port, throwaway_user
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio


@pytest.fixture
def someone(admin_pb, seeded):
    """A learner of tenant demo for this test alone (Overal afmelden must not sign the seeded users out)."""
    with throwaway_user(admin_pb, name="Sanne Afmeld", prefix="signout") as (email, row):
        yield email, row


def distinct(make: Callable[[], str], *taken: str) -> str:
    """A new session's token, unlike `taken`: PocketBase makes the same token for two sign-ins of a user in the same
    second (the app's own sign-ins differ by a random few seconds of life, a REST sign-in does not)."""
    for _ in range(50):
        token = make()
        if token not in taken:
            return token
        time.sleep(0.1)
    raise AssertionError("PocketBase gave the same token again and again")


def rest(pb_url: str, token: str, user_id: str) -> tuple[httpx.Response, httpx.Response]:
    """What PocketBase's REST API gives this token: the user's own record and the tenant's topics."""
    headers = {"Authorization": token}
    me = httpx.get(f"{pb_url}/api/collections/users/records/{user_id}", headers=headers)
    topics = httpx.get(f"{pb_url}/api/collections/topics/records", params={"perPage": 5}, headers=headers)
    return me, topics


def served(pb_url: str, token: str, user_id: str) -> bool:
    me, topics = rest(pb_url, token, user_id)
    return me.status_code == 200 and topics.status_code == 200 and len(topics.json()["items"]) > 0


def refused(pb_url: str, token: str, user_id: str) -> bool:
    """PocketBase does not serve the token as its user: 401 (a listed token), or nothing, as for a stranger (a token of
    an old token key)."""
    me, topics = rest(pb_url, token, user_id)
    return me.status_code in (401, 404) and (topics.status_code == 401 or topics.json()["items"] == [])


async def ask(token: str, question: str = "Wat is de dekkingsgraad?") -> httpx.Response:
    from r42_app.api import api

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.post("/api/chat", json={"messages": [{"role": "user", "content": question}],
                                                    "mode": "fts"}, headers={"Authorization": f"Bearer {token}"})


def events_of(response: httpx.Response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


async def tab_with(token: str) -> AuthState:
    """Another browser's tab holding `token` (one that a script read, say), its session checked now."""
    auth = substate(rx.State(_reflex_internal_init=True), AuthState)
    auth.session_token = token
    await call(auth, AuthState.check_session)
    assert auth.signed_in
    return auth


# -- Afmelden --------------------------------------------------------------------------------------------------------


async def test_afmelden_ends_that_token_in_pocketbase_the_api_and_other_tabs_while_another_session_goes_on(
        api_env, someone, pb_server):
    from r42_app import container

    email, row = someone
    auth = substate(await signed_in_root(email), AuthState)  # this tab signs in as the account menu's user
    token = auth.session_token
    other = distinct(lambda: AuthService(pb_server.url, pb_server.admin_client()).sign_in(email, DEMO_PASSWORD).token,
                     token)  # a second device
    copy = await tab_with(token)  # the same token in another browser, checked moments ago
    assert served(pb_server.url, token, row["id"]) and served(pb_server.url, other, row["id"])
    api_env.reply_text("Ja.")
    assert (await ask(token)).status_code == 200  # the API now remembers the token for 15 s

    await call(auth, AuthState.sign_out)  # "Afmelden"
    assert not auth.signed_in and auth.session_token == ""

    me, topics = rest(pb_server.url, token, row["id"])  # PocketBase itself refuses the token
    assert me.status_code == 401 and topics.status_code == 401 and topics.json()["message"] == msg("auth.signed_out")
    refusal = await ask(token)  # inside the API's cache window
    assert refusal.status_code == 401 and refusal.json()["type"] == "unauthenticated"
    assert await copy.user() is None and not copy.signed_in  # inside the other tab's 30 s
    assert copy.signin_error == msg("auth.session_ended")
    auth_service = container.services().auth
    assert auth_service.verify(token) is None
    checked = auth_service.checks([token, other])  # PocketBase's token checks refuse it too
    assert checked[0] is None and checked[1] is not None and checked[1].user.id == row["id"]

    assert served(pb_server.url, other, row["id"])  # the other device's session goes on
    api_env.reply_text("Ja.")
    answered = await ask(other)
    assert answered.status_code == 200 and events_of(answered)[-1]["type"] == "done"


async def test_a_signed_out_token_is_refused_by_every_worker_at_once(someone, pb_server, redis_url):
    """Two backend workers share Redis: a sign-out on one reaches the other's API token cache before its 15 s are up,
    without a PocketBase request (its chat turns are refused by PocketBase's guard anyway)."""
    from r42_app.services.runtime.shared_state import RedisSharedState

    email, _row = someone
    workers = [AuthService(pb_server.url, pb_server.admin_client(), shared=RedisSharedState(redis_url))
               for _ in range(2)]
    try:
        token = workers[0].sign_in(email, DEMO_PASSWORD).token
        other = distinct(lambda: workers[0].sign_in(email, DEMO_PASSWORD).token, token)
        for worker in workers:
            for t in (token, other):
                assert (await worker.check_soon(t)) is not None and await worker.remembered_now(t) is not None
        await workers[0].sign_out_from(token)
        assert workers[1].remembered(token) is not None  # still in its cache ...
        assert await workers[1].remembered_now(token) is None  # ... but not accepted from it
        assert await workers[1].remembered_now(other) is not None  # the user's other session is not touched
        await workers[1].sign_out_from(other, everywhere=True)
        assert await workers[0].remembered_now(other) is None
    finally:
        for worker in workers:
            await worker.shared.close()


# -- Overal afmelden -------------------------------------------------------------------------------------------------


async def test_overal_afmelden_ends_every_session_of_the_user(api_env, someone, pb_server):
    email, row = someone
    auth = substate(await signed_in_root(email), AuthState)
    device = distinct(lambda: AuthService(pb_server.url, pb_server.admin_client()).sign_in(email, DEMO_PASSWORD).token,
                      auth.session_token)
    direct = distinct(lambda: pb_server.user(email).token, auth.session_token, device)  # a REST client's sign-in
    tab = await tab_with(device)
    tokens = [auth.session_token, device, direct]
    assert all(served(pb_server.url, t, row["id"]) for t in tokens)
    api_env.reply_text("Ja.")
    assert (await ask(device)).status_code == 200

    emitted = await call(auth, AuthState.sign_out_everywhere)  # "Overal afmelden"
    assert not auth.signed_in and msg("auth.signed_out_everywhere") in str(emitted)

    assert all(refused(pb_server.url, t, row["id"]) for t in tokens)
    refusal = await ask(device)
    assert refusal.status_code == 401
    assert await tab.user() is None and tab.signin_error == msg("auth.session_ended")
    again = AuthService(pb_server.url, pb_server.admin_client()).sign_in(email, DEMO_PASSWORD).token
    assert served(pb_server.url, again, row["id"])  # signing in again works as before


# -- the REST API's own sign-out -------------------------------------------------------------------------------------


def test_a_rest_client_signs_its_own_token_out_and_nobody_elses(someone, pb_server):
    email, row = someone
    sign_in = f"{pb_server.url}/api/collections/users/auth-with-password"
    mine = pb_server.user(email).token  # two REST sign-ins
    kept = distinct(lambda: pb_server.user(email).token, mine)
    route = f"{pb_server.url}/api/r42/sign-out"
    assert httpx.post(route, json={}).status_code == 401  # nobody's
    with throwaway_user(pb_server.admin_client(), prefix="signout-other") as (other_email, other_row):
        theirs = pb_server.user(other_email).token
        ended = httpx.post(route, json={"token": theirs}, headers={"Authorization": mine})
        assert ended.status_code == 200 and ended.json()["user"] == row["id"]  # a user ends their own token only
        assert served(pb_server.url, theirs, other_row["id"])
    assert refused(pb_server.url, mine, row["id"]) and served(pb_server.url, kept, row["id"])
    assert httpx.post(route, json={"everywhere": True}, headers={"Authorization": mine}).status_code == 401
    assert served(pb_server.url, kept, row["id"])  # a signed-out token cannot sign its user out everywhere
    assert httpx.post(sign_in, json={"identity": email, "password": DEMO_PASSWORD},  # nor stop a new sign-in
                      headers={"Authorization": mine}).status_code == 200
    assert httpx.post(route, json={"everywhere": True}, headers={"Authorization": kept}).status_code == 200
    assert refused(pb_server.url, kept, row["id"])
    admin = pb_server.admin_client()
    assert admin.send("POST", "/api/r42/sign-out", body={"token": "not-a-token"}) == {"user": "", "everywhere": False}


async def test_a_realtime_subscription_of_a_signed_out_token_hears_nothing_more(someone, pb_server, admin_pb):
    email, row = someone
    first = pb_server.user(email).token
    tokens = [first, distinct(lambda: pb_server.user(email).token, first)]  # the first is signed out, not the second
    heard: list[list[str]] = [[], []]
    ready = [asyncio.Event(), asyncio.Event()]

    async def listen(i: int) -> None:
        async with httpx.AsyncClient(base_url=pb_server.url, timeout=None) as client, \
                client.stream("GET", "/api/realtime") as stream:
            event = ""
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:]
                elif line.startswith("data:") and event == "PB_CONNECT":
                    subscribed = await client.post("/api/realtime", headers={"Authorization": tokens[i]}, json={
                        "clientId": json.loads(line[5:])["clientId"], "subscriptions": [f"users/{row['id']}"]})
                    assert subscribed.status_code == 204
                    ready[i].set()
                elif line.startswith("data:"):
                    heard[i].append(json.loads(line[5:])["record"]["name"])

    async def rename(name: str) -> None:
        await asyncio.to_thread(admin_pb.update, "users", row["id"], {"name": name})
        for _ in range(100):
            if name in heard[1]:
                return
            await asyncio.sleep(0.05)
        pytest.fail(f"the listener that was not signed out never heard {name!r}")

    listeners = [asyncio.create_task(listen(i)) for i in range(2)]
    try:
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 10)
        await rename("Voor Afmelden")
        for _ in range(40):
            if "Voor Afmelden" in heard[0]:
                break
            await asyncio.sleep(0.05)
        assert heard[0] == ["Voor Afmelden"]  # both hear the user's record before
        ended = await asyncio.to_thread(httpx.post, f"{pb_server.url}/api/r42/sign-out",
                                        headers={"Authorization": tokens[0]})
        assert ended.status_code == 200
        await rename("Na Afmelden")
        await asyncio.sleep(0.5)  # sent to both at the same moment: the other has heard it already
        assert heard[0] == ["Voor Afmelden"]
    finally:
        for task in listeners:
            task.cancel()
        await asyncio.gather(*listeners, return_exceptions=True)


# -- the revocation list itself -----------------------------------------------------------------------------------


def test_the_list_survives_a_restart_and_forgets_dead_tokens(tmp_path):
    """PocketBase keeps the list in memory for speed: a restart reads it back from the table. A listed token that has
    expired anyway is pruned at the next sign-out."""
    data = tmp_path / "pb_data"
    creds = ensure_superuser(data, tmp_path / "superuser.json")
    server = PocketBaseServer(data, free_port()).start()
    try:
        admin = PocketBase(server.url).as_superuser(creds.email, creds.password)
        tenant = admin.create("tenants", {"slug": "herstart", "name": "Herstart"})
        user = admin.create("users", {"email": "herstart@example.com", "password": DEMO_PASSWORD,
                                      "passwordConfirm": DEMO_PASSWORD, "name": "Her Start", "role": "learner",
                                      "tenant": tenant["id"], "verified": True})
        auth = AuthService(server.url, admin)
        ended = auth.sign_in("herstart@example.com", DEMO_PASSWORD).token
        kept = distinct(lambda: auth.sign_in("herstart@example.com", DEMO_PASSWORD).token, ended)
        dead = admin.create("revoked_tokens", {"hash": "0" * 64, "expires": "2020-01-01 00:00:00.000Z"})
        assert auth.sign_out(ended) == user["id"]
        assert dead["id"] not in {r["id"] for r in admin.all("revoked_tokens")}  # pruned
        admin.close()
    finally:
        server.stop()
    server = PocketBaseServer(data, free_port()).start()
    try:
        assert refused(server.url, ended, user["id"]) and served_or_empty(server.url, kept, user["id"])
        admin = PocketBase(server.url).as_superuser(creds.email, creds.password)
        assert AuthService(server.url, admin).checks([ended])[0] is None
        admin.close()
    finally:
        server.stop()


def served_or_empty(pb_url: str, token: str, user_id: str) -> bool:
    """The token is its user's (a tenant without topics lists none)."""
    me, topics = rest(pb_url, token, user_id)
    return me.status_code == 200 and topics.status_code == 200


# -- a user moved to another tenant (finding 8b) ----------------------------------------------------------------------


async def test_a_user_moved_to_another_tenant_is_not_answered_from_the_old_one(api_env, someone, pb_server, admin_pb):
    email, row = someone
    token = pb_server.user(email).token
    tenants = {slug: admin_pb.first("tenants", f'slug = "{slug}"')["id"] for slug in ("demo", "acme")}
    slugs = {slug: {t["slug"] for t in admin_pb.all("topics", filter=f'tenant = "{tid}"')}
             for slug, tid in tenants.items()}
    api_env.reply_text("Zo werkt waardeoverdracht [ref:1].")
    before = await ask(token, "Wat is waardeoverdracht?")
    assert before.status_code == 200
    assert {s["slug"] for e in events_of(before) if e["type"] == "sources" for s in e["sources"]} <= slugs["demo"]

    admin_pb.update("users", row["id"], {"tenant": tenants["acme"]})  # moved, while the API still remembers the token
    asked = len(api_env.requests)
    moved = await ask(token, "Wat is een heftruckcertificaat?")
    assert moved.status_code == 401 and moved.json()["message"] == msg("chat.session_changed")
    assert len(api_env.requests) == asked  # no model call, nothing of the old tenant

    api_env.reply_text("Zo haal je het heftruckcertificaat [ref:1].")
    after = await ask(token, "Wat is een heftruckcertificaat?")  # the token is checked anew: the new tenant
    assert after.status_code == 200
    sources = {s["slug"] for e in events_of(after) if e["type"] == "sources" for s in e["sources"]}
    assert "heftruckcertificaat" in sources and sources <= slugs["acme"]


async def test_the_chat_window_of_a_moved_user_is_refused_and_the_tab_takes_the_new_tenant(api_env, someone,
                                                                                              admin_pb):
    """The window's turn (the tab's user checked moments ago, in the old tenant) is refused as well; the tab then
    checks its session anew, as ChatState.generate does on that refusal, and has the new tenant."""
    from r42_app import container
    from r42_app.chat.turn import ChatRefused, run_turn

    email, row = someone
    auth = substate(await signed_in_root(email), AuthState)
    user = await auth.user()
    assert user is not None and user.tenant_slug == "demo"
    admin_pb.update("users", row["id"], {"tenant": admin_pb.first("tenants", 'slug = "acme"')["id"]})
    api_env.reply_text("Zo werkt waardeoverdracht [ref:1].")
    with pytest.raises(ChatRefused) as refused:
        async for _event in run_turn(user, [{"role": "user", "content": "Wat is waardeoverdracht?"}],
                                     container.services().chat, "fts"):
            pass
    assert refused.value.kind == "unauthenticated" and refused.value.user_message == msg("chat.session_changed")
    assert (await auth.user(fresh=True)).tenant_slug == "acme"


def test_the_guard_checks_the_session_in_its_one_request(someone, admin_pb, pb_server):
    """The turn's guard (one PocketBase request, as before) answers 401 for a session that no longer holds: another
    role or tenant than the session says ("changed"), or a signed-out token ("signed_out")."""
    email, row = someone
    store = AccessStore(admin_pb)
    demo = admin_pb.first("tenants", 'slug = "demo"')
    token = pb_server.user(email).token
    other = distinct(lambda: pb_server.user(email).token, token)
    now = pb_time(datetime.now(UTC))
    results = store.turn_guards([(demo["id"], row["id"], now, "learner", token),
                                 (demo["id"], row["id"], now, "admin", token),
                                 (demo["id"], row["id"], now, "learner", other)])
    assert isinstance(results[0], GuardReading) and isinstance(results[2], GuardReading)
    assert isinstance(results[1], PBError) and (results[1].status, results[1].data["reason"]) == (401, "changed")
    AuthService(pb_server.url, admin_pb).sign_out(token)
    results = store.turn_guards([(demo["id"], row["id"], now, "learner", token),
                                 (demo["id"], row["id"], now, "learner", other)])
    assert isinstance(results[0], PBError) and results[0].data["reason"] == "signed_out"
    assert isinstance(results[1], GuardReading)
    with pytest.raises(PBError) as single:
        store.turn_guard(demo["id"], row["id"], now, "learner", token)
    assert single.value.status == 401 and single.value.data["reason"] == "signed_out"


async def test_the_session_check_costs_a_turn_no_request_more(api_env, someone, pb_server, monkeypatch):
    """A question whose token the API remembers asks PocketBase once for its guard (session check included) and not
    about the token: the chat's hot path has no request more than before."""
    email, _row = someone
    token = pb_server.user(email).token
    api_env.reply_text("Ja.")
    assert (await ask(token)).status_code == 200  # the token is remembered now
    paths: list[str] = []
    real_send, real_get = PocketBase.send, httpx.Client.get

    def send(self, method, path, *args, **kwargs):
        paths.append(path)
        return real_send(self, method, path, *args, **kwargs)

    def get(self, url, *args, **kwargs):
        paths.append(str(url))
        return real_get(self, url, *args, **kwargs)

    monkeypatch.setattr(PocketBase, "send", send)
    monkeypatch.setattr(httpx.Client, "get", get)
    api_env.reply_text("Ja.")
    assert (await ask(token)).status_code == 200
    guards = [p for p in paths if p.startswith("/api/r42/turn-guard")]
    tokens = [p for p in paths if "token-checks" in p or "/collections/users/records" in p]
    assert len(guards) == 1 and tokens == []
