"""Graph edits against the real PocketBase: apply_delta all or nothing, suggestions, approve once,
and learners cannot write through PocketBase's API either."""

import pytest

from r42_app.core.delta import GraphSnapshot, ValidDelta, validate_delta
from r42_app.services.store.kb_store import BATCH_SIZE, KBError, KBStore
from r42_app.services.store.pb import PBError
from r42_app.services.store.suggestions import SuggestionStore


@pytest.fixture
def stores(admin_pb, seeded):
    kb = KBStore(admin_pb)
    tenant = kb.require_tenant("demo")
    yield kb, SuggestionStore(admin_pb, kb), tenant
    for topic in kb.topic_summaries(tenant):  # leave the shared demo KB as the other tests expect it
        if topic.slug.startswith("edit-"):
            kb.delete_topic(tenant, topic.slug)


def edit(suffix, relations=None):
    return {"reason": "Ontbreekt nog.", "topics": [{"id": f"edit-{suffix}", "label": f"Edit {suffix}",
                                                    "type": "concept", "description": "Een voorgesteld onderwerp."}],
            "relations": relations if relations is not None else
            [{"source": f"edit-{suffix}", "target": "pensioenregeling", "type": "part_of"}]}


def valid(kb, tenant, raw):
    data = kb.load(tenant)
    out = validate_delta(raw, GraphSnapshot(data.topics, data.relations))
    assert isinstance(out, ValidDelta), out
    return out


def test_apply_delta_writes_topics_relations_and_outbox(stores, admin_pb):
    kb, _, tenant = stores
    applied = kb.apply_delta(tenant, valid(kb, tenant, edit("a")))
    assert [t.id for t in applied.topics] == ["edit-a"]
    assert kb.topic(tenant, "edit-a").label == "Edit a"
    assert any(r.source == "edit-a" and r.type == "part_of" for r in kb.relations(tenant))
    assert admin_pb.first("outbox", 'payload.topic = "edit-a"')


def test_apply_delta_is_all_or_nothing(stores, admin_pb):
    kb, _, tenant = stores
    good = valid(kb, tenant, edit("b"))
    # A concurrent write creates the same topic first: the batch fails as a whole (no relation either).
    row = admin_pb.create("topics", {"tenant": tenant.id, "slug": "edit-b", "label": "Concurrent", "type": "concept",
                                     "description": "Eerder geschreven."})
    try:
        with pytest.raises(KBError):
            kb._run(_requests_of(kb, tenant, good), size=BATCH_SIZE)  # as apply_delta sends it
        assert kb.topic(tenant, "edit-b").label == "Concurrent"
        assert not any(r.source == "edit-b" for r in kb.relations(tenant))
    finally:
        admin_pb.delete("topics", row["id"])


def _requests_of(kb, tenant, delta):
    from r42_app.core.kb import Topic
    from r42_app.services.store.kb_store import _topic_body
    from r42_app.services.store.pb import BatchRequest

    out = [BatchRequest.create("topics", {"tenant": tenant.id, **_topic_body(Topic(t.id, t.label, t.type,
                                                                                    t.description, ""))})
           for t in delta.topics]
    out += [BatchRequest.create("relations", {"tenant": tenant.id, "source": r.source, "target": r.target,
                                              "type": r.type}) for r in delta.relations]
    return out


def test_applying_the_same_edit_twice_applies_once(stores):
    kb, _, tenant = stores
    first = valid(kb, tenant, edit("c"))
    kb.apply_delta(tenant, first)
    with pytest.raises(KBError, match="already in the knowledge base"):
        kb.apply_delta(tenant, first)
    assert len([t for t in kb.topics(tenant) if t.slug == "edit-c"]) == 1


def test_learner_suggestion_is_queued_and_approved_once(stores, admin_pb):
    kb, suggestions, tenant = stores
    learner = admin_pb.first("users", 'email = "learner@example.com"')
    admin = admin_pb.first("users", 'email = "admin@example.com"')
    s = suggestions.append_suggestion(tenant, learner["id"], valid(kb, tenant, edit("d")))
    assert s.status == "pending" and kb.topic(tenant, "edit-d") is None  # nothing written yet
    assert [x.id for x in suggestions.list(tenant, "pending")] == [s.id]
    suggestions.approve(tenant, s.id, admin["id"])
    with pytest.raises(KBError) as again:
        suggestions.approve(tenant, s.id, admin["id"])
    assert again.value.user_message == "Dit voorstel is al goedgekeurd."
    assert kb.topic(tenant, "edit-d") is not None
    done = suggestions.list(tenant, "approved")[0]
    assert done.reviewed_by == "Anton Admin" and done.user_name == "Lotte de Leerling" and done.reviewed_at


def test_approval_revalidates_against_the_current_kb(stores, admin_pb):
    kb, suggestions, tenant = stores
    learner = admin_pb.first("users", 'email = "learner@example.com"')
    admin = admin_pb.first("users", 'email = "admin@example.com"')
    s = suggestions.append_suggestion(tenant, learner["id"], valid(kb, tenant, edit("e")))
    kb.apply_delta(tenant, valid(kb, tenant, edit("e")))  # meanwhile an admin added it
    with pytest.raises(KBError, match="no longer be applied"):
        suggestions.approve(tenant, s.id, admin["id"])
    suggestions.reject(tenant, s.id, admin["id"], "Bestaat al.")
    assert suggestions.list(tenant, "rejected")[0].review_note == "Bestaat al."


def test_other_tenants_suggestions_are_out_of_reach(stores, admin_pb):
    kb, suggestions, tenant = stores
    acme = kb.require_tenant("acme")
    learner = admin_pb.first("users", 'email = "learner@example.com"')
    s = suggestions.append_suggestion(tenant, learner["id"], valid(kb, tenant, edit("f")))
    with pytest.raises(KBError) as elsewhere:
        suggestions.approve(acme, s.id, learner["id"])
    assert "bestaat niet" in elsewhere.value.user_message


def test_learner_cannot_apply_a_delta_through_pocketbase(pb_server, stores):
    kb, _, tenant = stores
    learner = pb_server.user("learner@example.com")
    with pytest.raises(PBError):
        learner.batch(_requests_of(kb, tenant, valid(kb, tenant, edit("g"))))
    assert kb.topic(tenant, "edit-g") is None


def test_concurrent_approvals_of_one_suggestion_apply_once(stores, admin_pb, pb_server):
    """Two admins press Approve at the same moment: one applies, the other is refused, the KB holds
    the edit once."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    kb, suggestions, tenant = stores
    learner = admin_pb.first("users", 'email = "learner@example.com"')
    admin = admin_pb.first("users", 'email = "admin@example.com"')
    s = suggestions.append_suggestion(tenant, learner["id"], valid(kb, tenant, edit("race")))
    gate = Barrier(2)

    def approve(_):
        pb = pb_server.admin()  # each admin with an own connection
        store = SuggestionStore(pb, KBStore(pb))
        gate.wait()
        try:
            store.approve(tenant, s.id, admin["id"])
            return "applied"
        except (KBError, PBError):
            return "refused"

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(approve, range(2)))
    assert outcomes == ["applied", "refused"]
    assert [t.slug for t in kb.topics(tenant) if t.slug == "edit-race"] == ["edit-race"]
    assert len([r for r in kb.relations(tenant) if r.source == "edit-race"]) == 1
    assert suggestions.list(tenant, "approved")[0].id == s.id
