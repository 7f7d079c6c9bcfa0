"""Issue 10, hole 1: a learner talking to PocketBase directly must not be able to file a suggestion
the app would never write, and a malformed row that got in anyway (an operator's hand edit, an
older version) must never take down the admin pages that list it."""

import pytest

from r42_app.services.store.kb_store import KBError, KBStore
from r42_app.services.store.pb import PBError, quote
from r42_app.services.store.suggestions import SuggestionStore
from r42_app.state.graph import GraphState
from r42_app.state.suggestions import SuggestionsState
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio

GOOD_DELTA = {"reason": "Ontbreekt nog.", "topics": [{"id": "hole-one-topic", "label": "Hole one topic",
                                                      "type": "concept", "description": "Een test."}],
              "relations": [{"source": "hole-one-topic", "target": "aow", "type": "related_to"}]}
MALFORMED = [[1], "NOT-AN-OBJECT", {"topics": "NOT-A-LIST"}, {"topics": [{"id": 5}]}, {"relations": [7]}]
ODD = [{"reason": "x", "topics": [], "relations": []},  # adds nothing
       {**GOOD_DELTA, "evil": {"__proto__": 1}},  # keys the app never writes
       {**GOOD_DELTA, "topics": [{**GOOD_DELTA["topics"][0], "type": "c"}]}]  # a type that does not exist


@pytest.fixture
def ctx(pb_server, seeded, admin_pb, app_env):
    """The demo tenant, the learner (as a PocketBase client with its own token) and cleanup."""
    demo = admin_pb.first("tenants", 'slug = "demo"')
    learner = pb_server.user("learner@example.com")
    me = learner.me()
    before = {r["id"] for r in admin_pb.all("suggestions")}
    yield demo, learner, me
    for row in admin_pb.all("suggestions"):
        if row["id"] not in before:
            admin_pb.delete("suggestions", row["id"])


def _count(admin_pb, demo):
    return len(admin_pb.all("suggestions", filter=f"tenant = {quote(demo['id'])}"))


@pytest.mark.parametrize("delta", MALFORMED, ids=["list", "string", "topics-not-list", "bad-topic", "bad-relation"])
def test_learner_cannot_file_a_malformed_delta(ctx, admin_pb, delta):
    demo, learner, me = ctx
    before = _count(admin_pb, demo)
    with pytest.raises(PBError) as err:
        learner.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": delta, "status": "pending"})
    assert err.value.status in (400, 403)
    assert _count(admin_pb, demo) == before


@pytest.mark.parametrize("delta", ODD, ids=["empty", "extra-keys", "bad-type"])
def test_learner_cannot_file_a_delta_the_app_would_not_write(ctx, admin_pb, delta):
    demo, learner, me = ctx
    before = _count(admin_pb, demo)
    with pytest.raises(PBError) as err:
        learner.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": delta, "status": "pending"})
    assert err.value.status == 400 and _count(admin_pb, demo) == before


@pytest.mark.parametrize("forged", [{"reviewed_by": "SELF"}, {"reviewed_at": "2026-01-01 10:00:00.000Z"},
                                    {"review_note": "Goedgekeurd door de directie"}, {"status": "approved"}])
def test_learner_cannot_forge_a_review(ctx, admin_pb, forged):
    demo, learner, me = ctx
    body = {"tenant": demo["id"], "user": me["id"], "delta": GOOD_DELTA, "status": "pending", **forged}
    if body.get("reviewed_by") == "SELF":
        body["reviewed_by"] = me["id"]
    before = _count(admin_pb, demo)
    with pytest.raises(PBError):
        learner.create("suggestions", body)
    assert _count(admin_pb, demo) == before


def test_learner_can_still_file_a_well_formed_suggestion(ctx, admin_pb):
    demo, learner, me = ctx
    row = learner.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": GOOD_DELTA,
                                         "reason": "Ontbreekt nog.", "status": "pending"})
    assert row["status"] == "pending" and row["reviewed_by"] == ""


def test_a_learner_has_at_most_20_open_suggestions(ctx, admin_pb, pb_server):
    demo, learner, me = ctx
    store = SuggestionStore(admin_pb, KBStore(admin_pb))
    open_now = len(admin_pb.all("suggestions", filter=f"user = {quote(me['id'])} && status = \"pending\""))
    for _ in range(20 - open_now):
        learner.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": GOOD_DELTA, "status": "pending"})
    with pytest.raises(PBError) as err:
        learner.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": GOOD_DELTA, "status": "pending"})
    assert "20 open voorstellen" in str(err.value)
    # the app's own path says the same, in words a learner reads in the chat
    kb = KBStore(admin_pb)
    tenant = kb.require_tenant("demo")
    from r42_app.core.delta import GraphSnapshot, validate_delta

    snapshot = kb.load(tenant)
    valid = validate_delta(GOOD_DELTA, GraphSnapshot(snapshot.topics, snapshot.relations))
    with pytest.raises(KBError) as refused:
        store.append_suggestion(tenant, me["id"], valid)
    assert "20 open voorstellen" in refused.value.user_message and refused.value.user_message == err.value.message


def test_bulk_batch_writes_by_a_learner_are_refused(ctx, admin_pb):
    demo, learner, me = ctx
    before = _count(admin_pb, demo)
    body = {"tenant": demo["id"], "user": me["id"], "delta": GOOD_DELTA, "status": "pending"}
    requests = [{"method": "POST", "url": "/api/collections/suggestions/records", "body": body} for _ in range(50)]
    with pytest.raises(PBError) as err:
        learner.send("POST", "/api/batch", body={"requests": requests})
    assert err.value.status in (400, 403, 413, 429)
    assert _count(admin_pb, demo) == before


def test_an_oversized_delta_is_refused(ctx, admin_pb):
    demo, learner, me = ctx
    huge = {**GOOD_DELTA, "reason": "x" * 99_000}
    with pytest.raises(PBError):
        learner.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": huge, "status": "pending"})


@pytest.fixture
def malformed_rows(ctx, admin_pb):
    """Malformed pending rows written past the API rules (as an operator could), next to a good one."""
    demo, _learner, me = ctx
    ids = [admin_pb.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": delta,
                                           "status": "pending"})["id"] for delta in [*MALFORMED, ODD[0], ODD[2]]]
    good = admin_pb.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": GOOD_DELTA,
                                           "reason": "Ontbreekt nog.", "status": "pending"})
    return ids, good["id"]


async def test_review_queue_loads_with_malformed_rows(malformed_rows):
    bad_ids, good_id = malformed_rows
    queue = substate(await signed_in_root("admin@example.com"), SuggestionsState)
    await call(queue, SuggestionsState.load)
    assert not queue.loading and queue.load_error == ""
    rows = {r.id: r for r in queue.rows}
    assert all(rows[i].invalid and rows[i].problem for i in bad_ids)
    assert not rows[good_id].invalid and "Nieuw onderwerp: Hole one topic (Concept)" in rows[good_id].lines

    emitted = await call(queue, SuggestionsState.approve, bad_ids[0])  # refused with a reason, nothing written
    assert "alleen worden afgewezen" in str(emitted)
    await call(queue, SuggestionsState.reject, bad_ids[0])
    assert bad_ids[0] not in {r.id for r in queue.rows}  # gone from the open list


async def test_graph_loads_with_malformed_rows(malformed_rows):
    _bad, _good = malformed_rows
    graph = substate(await signed_in_root("admin@example.com"), GraphState)
    await call(graph, GraphState.load)
    assert graph.load_error == "" and not graph.loading
    assert "hole-one-topic" in {n["id"] for n in graph.nodes}  # the good suggestion is still drawn
