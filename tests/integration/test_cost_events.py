"""AI cost events end to end (issue 12): the fake model reports exact usage per round through the real
SDK, the turn apportions it per capability, and each event is written once and the tenant's credits debited
once: at the turn's end in one transaction (issue 26), or through the outbox and its persister when PocketBase
refuses that."""

import json
import logging

import httpx
import pytest

from r42_app.api import api
from r42_app.chat.turn import run_turn
from r42_app.container import services
from r42_app.services.outbox.costs import CostPersister
from r42_app.services.store.auth import AuthService
from r42_app.services.store.costs import OUTBOX_COST
from r42_app.services.store.pb import PBError
from tests.integration.conftest import rebuild_services

pytestmark = pytest.mark.anyio

ROUND_1 = {"input_tokens": 1200, "output_tokens": 40, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 0}
ROUND_2 = {"input_tokens": 1500, "output_tokens": 200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000}


@pytest.fixture
async def priced(api_env, monkeypatch, admin_pb):
    """api_env with a model the price table knows (Haiku: $1 in, $5 out per million), demo's credits
    restored and cost rows of the test removed afterwards."""
    await rebuild_services()
    monkeypatch.setenv("R42_MODEL", "claude-haiku-4-5")
    CostPersister(admin_pb).drain()  # cost rows that earlier tests left in the outbox are not this test's
    demo = admin_pb.first("tenants", 'slug = "demo"')
    before = {"credits": demo["credits"], "credits_unlimited": demo.get("credits_unlimited", False)}
    outbox_before = {r["id"] for r in admin_pb.all("outbox", filter=f'type = "{OUTBOX_COST}"')}
    yield api_env, demo
    admin_pb.update("tenants", demo["id"], before)
    for r in admin_pb.all("outbox", filter=f'type = "{OUTBOX_COST}"'):
        if r["id"] not in outbox_before:
            admin_pb.delete("outbox", r["id"])
    await rebuild_services()


@pytest.fixture
def token(pb_server, seeded):
    return pb_server.user("learner@example.com").token


async def ask(token, question="Wat is de dekkingsgraad?"):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        resp = await client.post("/api/chat", json={"messages": [{"role": "user", "content": question}], "mode": "fts"},
                                 headers={"Authorization": f"Bearer {token}"})
    return [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]


async def settle(admin_pb):
    """Wait for the turn's events (or its outbox row), then run the persister as the app backend would."""
    await services().chat.costs.flush()
    return CostPersister(admin_pb).drain()


def events_of(admin_pb, turn_id):
    return {e["source"]: e for e in admin_pb.all("ai_cost_events", filter=f'turn_id = "{turn_id}"')}


async def test_a_turn_with_a_tool_round_gives_exactly_the_apportioned_events(priced, token, admin_pb):
    fake, demo = priced
    fake.reply_tool("kb_search", {"query": "dekkingsgraad"}, usage=ROUND_1)
    fake.reply_text("De dekkingsgraad [ref:1].", usage=ROUND_2)
    done = (await ask(token))[-1]
    await services().chat.costs.flush()
    events = events_of(admin_pb, done["turn_id"])  # written at the turn's end, without the outbox
    assert set(events) == {"chatbot:kb_search", "chatbot:chat_general"}
    search, chat = events["chatbot:kb_search"], events["chatbot:chat_general"]
    assert (search["capability"], chat["capability"]) == ("tool-call", "chat-stream")
    assert [search[k] for k in ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")] == \
        [1200, 40, 1000, 0]
    assert [chat[k] for k in ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")] == \
        [1500, 200, 0, 1000]
    assert search["cost_usd"] == pytest.approx(0.00265) and search["credits"] == pytest.approx(2.65)
    assert chat["cost_usd"] == pytest.approx(0.0026) and chat["credits"] == pytest.approx(2.6)
    assert search["model"] == "claude-haiku-4-5" and search["user"] and search["tenant"] == demo["id"]
    after = admin_pb.get("tenants", demo["id"])["credits"]
    assert after == pytest.approx(demo["credits"] - 5.25)
    assert not [r for r in admin_pb.all("outbox", filter=f'type = "{OUTBOX_COST}"')
                if r["payload"]["turn_id"] == done["turn_id"]]
    assert CostPersister(admin_pb).drain().events == 0  # nothing left for the persister: nothing written twice
    assert len(events_of(admin_pb, done["turn_id"])) == 2
    assert admin_pb.get("tenants", demo["id"])["credits"] == after
    # the token totals of the events equal what the model reported, to the token
    assert done["usage"]["input_tokens"] == search["input_tokens"] + chat["input_tokens"]


async def test_two_tools_of_different_capabilities_in_one_round_split_by_calls(priced, token, admin_pb):
    fake, _demo = priced
    fake.reply_tools([("kb_search", {"query": "aow"}), ("propose_graph_delta", {"reason": "x", "topics": [],
                                                                                  "relations": []})],
                     usage={"input_tokens": 1001, "output_tokens": 41, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0})
    fake.reply_text("Klaar.", usage={"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0,
                                     "cache_read_input_tokens": 0})
    done = (await ask(token, "Wat is de AOW?"))[-1]
    await settle(admin_pb)
    events = events_of(admin_pb, done["turn_id"])
    assert {k: (e["input_tokens"], e["output_tokens"]) for k, e in events.items()} == {
        "chatbot:kb_search": (500, 20), "chatbot:data_write": (501, 21), "chatbot:chat_general": (10, 2)}


async def test_a_stopped_answer_still_records_what_was_spent(priced, pb_server, admin_pb):
    fake, _demo = priced
    fake.reply_text("Een lang antwoord dat niet afkomt", chunk_delay=0.3, usage=ROUND_2)
    user = AuthService(pb_server.url, pb_server.admin_client()).sign_in("learner@example.com", "test-demo-pass-1").user
    turn = run_turn(user, [{"role": "user", "content": "Vertel alles."}], services().chat, "fts")
    async for event in turn:
        if event.type == "text":
            break  # the user presses stop after the first words
    await turn.aclose()
    await settle(admin_pb)
    rows = admin_pb.all("ai_cost_events", filter='source = "chatbot:chat_general"', sort="-created")
    newest = rows[0]  # input and cache as the response started; 1 output token reported so far
    assert (newest["input_tokens"], newest["cache_read_tokens"], newest["output_tokens"]) == (1500, 1000, 1)


async def test_a_model_error_mid_stream_still_records_what_was_spent(priced, token, admin_pb):
    fake, _demo = priced
    fake.reply_text("Begin van", error_event="overloaded_error", usage=ROUND_1)
    before = len(admin_pb.all("ai_cost_events", fields="id"))
    events = await ask(token)
    assert events[-1]["type"] == "error"
    await settle(admin_pb)
    assert len(admin_pb.all("ai_cost_events", fields="id")) == before + 1
    newest = admin_pb.all("ai_cost_events", sort="-created")[0]
    assert (newest["input_tokens"], newest["cache_write_tokens"]) == (1200, 1000)


async def test_refused_at_the_turns_end_the_events_go_through_the_outbox_and_replaying_writes_nothing_twice(
        priced, token, admin_pb, monkeypatch, caplog):
    fake, demo = priced
    recorder = services().chat.costs

    def refused(events, day=""):
        raise PBError(400, "PocketBase refused the transaction")

    monkeypatch.setattr(recorder, "write_events", refused)
    caplog.set_level(logging.WARNING, logger="r42.ai_cost.publisher")
    fake.reply_text("Kort.", usage=ROUND_2)
    done = (await ask(token))[-1]
    await recorder.flush()
    assert "go through the outbox" in caplog.text
    assert events_of(admin_pb, done["turn_id"]) == {}  # not written yet: queued for the persister
    credits = admin_pb.get("tenants", demo["id"])["credits"]
    rows = [r for r in admin_pb.all("outbox", filter=f'type = "{OUTBOX_COST}"')
            if r["payload"]["turn_id"] == done["turn_id"]]
    assert len(rows) == 1 and rows[0]["status"] == "pending"
    assert CostPersister(admin_pb).drain().events >= 1
    assert len(events_of(admin_pb, done["turn_id"])) == 1
    credits = admin_pb.get("tenants", demo["id"])["credits"]
    assert credits == pytest.approx(demo["credits"] - 2.6)
    for _ in range(2):  # replay the row (a crash after writing, before marking it done)
        admin_pb.update("outbox", rows[0]["id"], {"status": "pending", "lease_until": ""})  # (its lease ended too)
        stats = CostPersister(admin_pb).drain()
        assert stats.events == 0 and stats.duplicates == 1
    assert len(events_of(admin_pb, done["turn_id"])) == 1
    assert admin_pb.get("tenants", demo["id"])["credits"] == credits


async def test_writing_a_turns_events_again_writes_and_debits_nothing(priced, token, admin_pb):
    """A direct write whose answer was lost and that is sent again (or then also queued in the outbox)."""
    fake, demo = priced
    fake.reply_text("Kort.", usage=ROUND_2)
    done = (await ask(token))[-1]
    await services().chat.costs.flush()
    [event] = events_of(admin_pb, done["turn_id"]).values()
    credits = admin_pb.get("tenants", demo["id"])["credits"]
    rollups = admin_pb.all("ai_cost_daily", filter=f'tenant = "{demo["id"]}"')
    again = {k: event[k] for k in ("id", "tenant", "user", "turn_id", "capability", "source", "model", "input_tokens",
                                   "output_tokens", "cache_write_tokens", "cache_read_tokens", "cost_usd", "credits")}
    assert services().chat.costs.write_events([again, again]) == {"written": 0, "duplicates": 2}
    assert admin_pb.get("tenants", demo["id"])["credits"] == credits
    assert admin_pb.all("ai_cost_daily", filter=f'tenant = "{demo["id"]}"') == rollups


async def test_an_event_of_a_user_deleted_meanwhile_is_kept_without_the_user(priced, admin_pb, seeded):
    _fake, demo = priced
    from tests.conftest import throwaway_user

    with throwaway_user(admin_pb, name="Weg", prefix="gone") as (_email, row):
        user_id = row["id"]
    event = {"id": "gonegonegone123", "tenant": demo["id"], "user": user_id, "turn_id": "t-gone",
             "capability": "chat-stream", "source": "chatbot:chat_general", "model": "claude-haiku-4-5",
             "input_tokens": 10, "output_tokens": 1, "cache_write_tokens": 0, "cache_read_tokens": 0,
             "cost_usd": 0.001, "credits": 1.0}
    try:
        assert services().chat.costs.write_events([event]) == {"written": 1, "duplicates": 0}
        stored = admin_pb.get("ai_cost_events", "gonegonegone123")
        assert stored["user"] == "" and stored["credits"] == 1.0
        day = admin_pb.all("ai_cost_daily",
                           filter=f'tenant = "{demo["id"]}" && user = "" && model = "claude-haiku-4-5"')
        assert day and day[0]["events"] >= 1
    finally:
        admin_pb.delete("ai_cost_events", "gonegonegone123")


async def test_a_bad_event_writes_nothing_of_its_batch(priced, admin_pb):
    _fake, demo = priced
    good = {"id": "goodgoodgood123", "tenant": demo["id"], "user": "", "turn_id": "t-bad", "capability": "chat-stream",
            "source": "chatbot:chat_general", "model": "m", "input_tokens": 1, "output_tokens": 1,
            "cache_write_tokens": 0, "cache_read_tokens": 0, "cost_usd": 0.5, "credits": 500.0}
    bad = {**good, "id": "badbadbadbad123", "tenant": "no-such-tenant1"}
    credits = admin_pb.get("tenants", demo["id"])["credits"]
    with pytest.raises(PBError):
        services().chat.costs.write_events([good, bad])
    with pytest.raises(PBError):
        admin_pb.get("ai_cost_events", "goodgoodgood123")
    assert admin_pb.get("tenants", demo["id"])["credits"] == credits


async def test_an_unlimited_plan_records_cost_but_debits_nothing(priced, token, admin_pb):
    fake, demo = priced
    admin_pb.update("tenants", demo["id"], {"credits_unlimited": True})
    fake.reply_text("Kort.", usage=ROUND_2)
    done = (await ask(token))[-1]
    await settle(admin_pb)
    assert len(events_of(admin_pb, done["turn_id"])) == 1
    assert admin_pb.get("tenants", demo["id"])["credits"] == demo["credits"]


async def test_the_switch_off_writes_no_events(priced, token, admin_pb, monkeypatch):
    fake, _demo = priced
    await rebuild_services()
    monkeypatch.setenv("AI_COST_TRACKING_ENABLED", "false")
    rows_before = len(admin_pb.all("outbox", filter=f'type = "{OUTBOX_COST}"'))
    events_before = len(admin_pb.all("ai_cost_events", fields="id"))
    fake.reply_text("Kort.", usage=ROUND_2)
    events = await ask(token)
    assert events[-1]["type"] == "done"
    await services().chat.costs.flush()
    assert len(admin_pb.all("outbox", filter=f'type = "{OUTBOX_COST}"')) == rows_before
    assert len(admin_pb.all("ai_cost_events", fields="id")) == events_before


async def test_an_unknown_model_warns_once_and_uses_the_default_price(priced, token, admin_pb, monkeypatch, caplog):
    fake, demo = priced
    await rebuild_services()
    monkeypatch.setenv("R42_MODEL", "claude-future-9")
    # at the default price a million input tokens cost 3,000 credits, debited at the turn's end: enough for two turns
    admin_pb.update("tenants", demo["id"], {"credits": 10_000})
    caplog.set_level(logging.WARNING, logger="r42_app.services.store.costs")
    turn_ids = []
    for _ in range(2):
        fake.reply_text("Kort.", usage={"input_tokens": 1_000_000, "output_tokens": 0,
                                        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
        turn_ids.append((await ask(token))[-1]["turn_id"])
    await settle(admin_pb)
    warnings = [r for r in caplog.records if "claude-future-9" in r.getMessage()]
    assert len(warnings) == 1
    assert events_of(admin_pb, turn_ids[0])["chatbot:chat_general"]["cost_usd"] == pytest.approx(3.0)  # default $3


def test_a_failure_to_queue_events_is_logged_as_publish_failed_and_never_fails_the_turn(caplog):
    from r42_app.core.costs import Price, Round, Usage
    from r42_app.services.store.costs import CostRecorder, PriceTable
    from r42_app.services.store.pb import PocketBase

    unreachable = PocketBase("http://127.0.0.1:9", timeout=0.5)  # nothing listens there
    recorder = CostRecorder(unreachable, PriceTable({}, Price(1.0, 5.0)))
    caplog.set_level(logging.ERROR, logger="r42.ai_cost.publisher")
    assert recorder.record("turn-x", "tenant-x", "user-x", "m", [Round(Usage(10, 1))]) == []
    [failed] = [r for r in caplog.records if r.name == "r42.ai_cost.publisher"]
    assert failed.getMessage().startswith("publish.failed turn=turn-x tenant=tenant-x reason=")
