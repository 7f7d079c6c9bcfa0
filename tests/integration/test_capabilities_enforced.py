"""Capabilities enforced on every path (issue 11), through the real ASGI app, PocketBase and the
anthropic SDK talking to the fake Messages API: what the model is offered, what dispatch runs, the
master switch, `qa_help`, `data_write` for confirming edits, and the rollback switch."""

import json
from contextlib import ExitStack

import httpx
import pytest

from r42_app.api import api
from r42_app.container import services
from r42_app.core.capabilities import DATA_WRITE, DENY, GRANT, KB_SEARCH, QA_HELP, AccessRow
from r42_app.core.messages import msg
from r42_app.services.store.access import AccessStore
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import PBError
from tests.conftest import throwaway_user
from tests.integration.conftest import rebuild_services

pytestmark = pytest.mark.anyio

PROPOSAL = {"reason": "Het wezenpensioen ontbreekt.",
            "topics": [{"id": "cap-wezenpensioen", "label": "Cap wezenpensioen", "type": "concept",
                        "description": "Uitkering aan kinderen."}],
            "relations": [{"source": "cap-wezenpensioen", "target": "nabestaandenpensioen", "type": "part_of"}]}


@pytest.fixture
def demo(admin_pb, seeded):
    return KBStore(admin_pb).require_tenant("demo")


@pytest.fixture
def person(pb_server, admin_pb, demo):
    """A throw-away user of tenant demo (learner unless asked): (record, token). Their access row and
    suggestions go with them."""
    with ExitStack() as stack:
        def make(role="learner"):
            email, row = stack.enter_context(throwaway_user(admin_pb, role, "Cap Test", "cap"))
            return row, pb_server.user(email).token

        yield make


@pytest.fixture
def tenant_settings(admin_pb, demo):
    """Restore demo's master switch and default after the test."""
    before = admin_pb.get("tenants", demo.id)
    yield
    admin_pb.update("tenants", demo.id, {"chatbot_enabled": before["chatbot_enabled"],
                                         "chatbot_default_capabilities": before["chatbot_default_capabilities"]})


def access(admin_pb):
    return AccessStore(admin_pb)


async def post(path, token, body):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.post(path, json=body, headers={"Authorization": f"Bearer {token}"})


async def ask(token, question="Wat is de AOW?"):
    return await post("/api/chat", token, {"messages": [{"role": "user", "content": question}], "mode": "fts"})


def events_of(response):
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def offered(request):
    return sorted(t["name"] for t in request["body"].get("tools", []))


async def test_a_deny_takes_effect_on_the_next_request_without_signing_in_again(api_env, admin_pb, demo, person):
    user, token = person()
    api_env.reply_text("Eerste.")
    assert (await ask(token)).status_code == 200
    assert offered(api_env.requests[-1]) == ["kb_search", "lookup_topic", "propose_graph_delta"]
    access(admin_pb).set_override(demo, user["id"], KB_SEARCH, DENY, "", "cli")
    api_env.reply_text("Tweede.")
    assert (await ask(token)).status_code == 200
    assert offered(api_env.requests[-1]) == ["propose_graph_delta"]
    assert "Tools offered in this turn: propose_graph_delta." in api_env.requests[-1]["body"]["system"][-1]["text"]


async def test_without_qa_help_the_api_refuses_and_the_model_is_never_called(api_env, admin_pb, demo, person):
    user, token = person()
    access(admin_pb).set_override(demo, user["id"], QA_HELP, DENY, "", "cli")
    resp = await ask(token)
    assert resp.status_code == 403 and resp.json()["type"] == "capability_denied"
    assert "uitgezet" in resp.json()["message"] and api_env.requests == []


async def test_the_master_switch_turns_r42_off_for_the_whole_tenant(api_env, admin_pb, demo, person, tenant_settings):
    _user, token = person()
    admin_token = person("admin")[1]
    access(admin_pb).set_enabled(demo, False, "", "cli")
    for t in (token, admin_token):
        resp = await ask(t)
        assert resp.status_code == 403 and resp.json()["type"] == "chatbot_disabled"
    resp = await post("/api/chat/delta", admin_token, {"delta": PROPOSAL})
    assert resp.status_code == 403 and resp.json()["type"] == "chatbot_disabled"
    assert api_env.requests == []
    access(admin_pb).set_enabled(demo, True, "", "cli")
    api_env.reply_text("Weer aan.")
    assert (await ask(token)).status_code == 200


async def test_a_tool_that_was_not_offered_is_never_run(api_env, admin_pb, demo, person):
    user, token = person()
    access(admin_pb).set_override(demo, user["id"], DATA_WRITE, DENY, "", "cli")
    api_env.reply_tool("propose_graph_delta", PROPOSAL)  # the model asks anyway
    api_env.reply_text("Dat kan ik niet.")
    events = events_of(await ask(token, "Bestaat er een wezenpensioen?"))
    assert not [e for e in events if e["type"] in ("delta", "delta_rejected", "tool")]
    assert "propose_graph_delta" not in offered(api_env.requests[0])
    result = api_env.requests[1]["body"]["messages"][-1]["content"][0]
    assert result["is_error"] is True and "not available" in result["content"]
    assert events[-1]["type"] == "done"


async def test_confirming_an_edit_needs_data_write(api_env, admin_pb, demo, person):
    learner, learner_token = person()
    resp = await post("/api/chat/delta", learner_token, {"delta": PROPOSAL})
    assert resp.status_code == 200 and resp.json()["status"] == "suggested"
    suggestions = admin_pb.all("suggestions", filter=f'user = "{learner["id"]}"')
    assert len(suggestions) == 1 and suggestions[0]["status"] == "pending"

    access(admin_pb).set_override(demo, learner["id"], DATA_WRITE, DENY, "", "cli")
    resp = await post("/api/chat/delta", learner_token, {"delta": PROPOSAL})
    assert resp.status_code == 403 and resp.json()["type"] == "capability_denied"
    assert len(admin_pb.all("suggestions", filter=f'user = "{learner["id"]}"')) == 1


async def test_a_learner_confirming_an_edit_that_no_longer_fits_gets_422_and_files_nothing(api_env, admin_pb, demo,
                                                                                           person):
    """The proposal was made against the knowledge base of a moment ago: its relation's topic is gone since."""
    learner, learner_token = person()
    stale = {**PROPOSAL, "relations": [{"source": "cap-wezenpensioen", "target": "cap-verdwenen", "type": "part_of"}]}
    resp = await post("/api/chat/delta", learner_token, {"delta": stale})
    assert resp.status_code == 422 and resp.json()["type"] == "delta_not_applied"
    assert resp.json()["message"] == msg("kb.delta_stale")  # "past niet meer bij de kennisbank ...; niets veranderd"
    assert admin_pb.all("suggestions", filter=f'user = "{learner["id"]}"') == []


async def test_an_admin_confirming_applies_the_edit_at_once(api_env, admin_pb, demo, person):
    _admin, admin_token = person("admin")
    kb = KBStore(admin_pb)
    try:
        resp = await post("/api/chat/delta", admin_token, {"delta": PROPOSAL})
        assert resp.status_code == 200 and resp.json() == {"status": "applied", "message": resp.json()["message"],
                                                           "topics": 1, "relations": 1}
        assert kb.topic(demo, "cap-wezenpensioen").label == "Cap wezenpensioen"
        again = await post("/api/chat/delta", admin_token, {"delta": PROPOSAL})  # already there now
        assert again.status_code == 422 and again.json()["type"] == "delta_not_applied"
        bad = await post("/api/chat/delta", admin_token, {"delta": "nope"})
        assert bad.status_code == 400
    finally:
        if kb.topic(demo, "cap-wezenpensioen"):
            kb.delete_topic(demo, "cap-wezenpensioen")


def test_learners_cannot_write_access_rows_or_tenants(pb_server, admin_pb, demo, person):
    user, token = person()
    from r42_app.services.store.pb import PocketBase

    learner = PocketBase(pb_server.url, token=token)
    with pytest.raises(PBError):
        learner.create("chatbot_access", {"tenant": demo.id, "user": user["id"],
                                          "capability_scopes": ["qa_help", "external_tools"], "overrides": {}})
    with pytest.raises(PBError):
        learner.update("tenants", demo.id, {"chatbot_enabled": True, "chatbot_default_capabilities": ["external_tools"]})
    assert admin_pb.all("chatbot_access", filter=f'user = "{user["id"]}"') == []


async def test_the_rollback_switch_reads_the_exact_list(api_env, admin_pb, demo, person, monkeypatch):
    user, token = person()
    store = access(admin_pb)
    # a V2 row whose projection (capability_scopes) was tampered with: the switch must read the list
    store.set_override(demo, user["id"], KB_SEARCH, GRANT, "", "cli")
    row = admin_pb.first("chatbot_access", f'user = "{user["id"]}"')
    admin_pb.update("chatbot_access", row["id"], {"capability_scopes": ["qa_help"]})
    api_env.reply_text("Met overrides.")
    await ask(token)
    assert offered(api_env.requests[-1]) == ["kb_search", "lookup_topic", "propose_graph_delta"]

    await rebuild_services()
    monkeypatch.setenv("R42_CAPABILITY_OVERRIDES_ENABLED", "false")
    api_env.reply_text("Exacte lijst.")
    await ask(token)
    assert offered(api_env.requests[-1]) == []
    assert AccessRow.from_record(row).overrides  # the overrides are kept, only ignored


async def test_the_window_path_is_rate_limited_like_the_api(api_env, admin_pb, demo, person):
    """The window runs `run_turn` without a permit (the guard runs inside it): same limiter, same user."""
    from r42_app.chat.turn import ChatRefused, run_turn
    from r42_app.services.store.auth import AuthService

    user, token = person()
    signed_in = AuthService(services().settings.pb_url, services().admin_pb).verify(token).user
    for _ in range(4):
        api_env.reply_text("Ja.")
        assert (await ask(token)).status_code == 200
    with pytest.raises(ChatRefused) as refused:
        async for _ in run_turn(signed_in, [{"role": "user", "content": "Nog een?"}], services().chat, "fts"):
            pass
    assert refused.value.kind == "rate_limited" and refused.value.retry_after > 0


# -- issue 26: the guard's reads in one request ------------------------------------------------------------


def test_the_one_request_guard_reads_what_the_three_lookups_read(admin_pb, demo, person, tenant_settings):
    from datetime import UTC, datetime, timedelta

    from r42_app.services.store.pb import pb_time
    from r42_app.services.store.quiz_store import QuizStore

    user, token = person()
    store = access(admin_pb)
    now = datetime.now(UTC)
    quizzes = QuizStore(admin_pb, clock=lambda: now)

    def both():
        reading = store.turn_guard(demo.id, user["id"], pb_time(now))
        old_chatbot, old_resolution = store.effective(demo.id, user["id"])
        assert (reading.chatbot, reading.resolution.effective, reading.quiz_active) == (
            old_chatbot, old_resolution.effective, quizzes.active(user["id"]))
        return reading.resolution.effective, reading.quiz_active

    assert both() == (store.tenant_chatbot(demo.id).default, False)  # no row: the tenant's default
    store.set_override(demo, user["id"], KB_SEARCH, DENY, actor_id="", actor="test")
    assert KB_SEARCH not in both()[0]  # the row counts at once
    row = admin_pb.first("chatbot_access", f'user = "{user["id"]}"')
    admin_pb.update("chatbot_access", row["id"], {"overrides": {"qa_help": "sometimes", "nope": GRANT}})
    assert QA_HELP in both()[0]  # a malformed row reads as no overrides, as before
    session = admin_pb.create("quiz_sessions", {"user": user["id"], "tenant": demo.id, "active": True,
                                                "started": pb_time(now), "expires": pb_time(now + timedelta(minutes=5))})
    assert both()[1] is True  # a quiz is open
    assert store.turn_guard(demo.id, user["id"], pb_time(now + timedelta(minutes=6))).quiz_active is False  # ...until it expires
    admin_pb.delete("quiz_sessions", session["id"])
    with pytest.raises(PBError) as gone:
        store.turn_guard("nosuchtenant123", user["id"], pb_time(now))
    assert gone.value.status == 404
    with pytest.raises(PBError):  # the route is the server's: a user's token is refused
        from r42_app.services.store.pb import PocketBase

        PocketBase(admin_pb.base_url, token=token).send(
            "POST", "/api/r42/turn-guard", body={"tenant": demo.id, "user": user["id"], "now": pb_time(now)})


def test_the_batched_guard_reads_each_turn_as_a_request_of_its_own_would(admin_pb, demo, person):
    """Turns that arrive together share one turn-guards request; each still gets its own user's reads, a
    check that cannot be answered fails only itself, and the route is the server's alone."""
    from datetime import UTC, datetime

    from r42_app.services.store.pb import PocketBase, pb_time

    now = pb_time(datetime.now(UTC))
    store = access(admin_pb)
    (denied, _), (plain, token) = person(), person()
    store.set_override(demo, denied["id"], KB_SEARCH, DENY, actor_id="", actor="test")
    results = store.turn_guards([(demo.id, denied["id"], now), ("nosuchtenant123", plain["id"], now),
                                 (demo.id, plain["id"], now), (demo.id, plain["id"], "not a date")])
    assert [type(r).__name__ for r in results] == ["GuardReading", "PBError", "GuardReading", "PBError"]
    assert results[0].resolution.effective == store.turn_guard(demo.id, denied["id"], now).resolution.effective
    assert KB_SEARCH not in results[0].resolution.effective and KB_SEARCH in results[2].resolution.effective
    assert (results[1].status, results[3].status) == (404, 400)
    for bad in ({"checks": []}, {"checks": "x"}, {"checks": [{"tenant": demo.id, "user": "u", "now": now}] * 201}):
        with pytest.raises(PBError) as refused:
            admin_pb.send("POST", "/api/r42/turn-guards", body=bad)
        assert refused.value.status == 400
    with pytest.raises(PBError):  # a user's token is refused
        PocketBase(admin_pb.base_url, token=token).send(
            "POST", "/api/r42/turn-guards", body={"checks": [{"tenant": demo.id, "user": plain["id"], "now": now}]})


async def test_turns_arriving_together_share_guard_requests_and_a_deny_counts_from_the_next_batch(admin_pb, demo,
                                                                                                  person):
    import asyncio
    from datetime import UTC, datetime

    from r42_app.services.store.pb import pb_time

    store = access(admin_pb)
    users = [person()[0] for _ in range(12)]
    now = pb_time(datetime.now(UTC))
    results = await asyncio.gather(*(store.guards.call((demo.id, u["id"], now)) for u in users))
    assert all(KB_SEARCH in reading.resolution.effective for reading in results)
    assert store.guards.batches < len(users)  # twelve turns, fewer requests (the first alone, the rest together)
    store.set_override(demo, users[3]["id"], KB_SEARCH, DENY, actor_id="", actor="test")
    reading = await store.guards.call((demo.id, users[3]["id"], now))
    assert KB_SEARCH not in reading.resolution.effective  # nothing cached: the deny counts at the next question
