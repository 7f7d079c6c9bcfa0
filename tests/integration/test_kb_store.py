"""Knowledge-base writes against a real PocketBase: validation, outbox rows, all-or-nothing."""

import pytest

from r42_app.core.kb import Relation
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBError, KBStore
from r42_app.services.store.pb import BULK_BATCH, quote


@pytest.fixture
def store(admin_pb, seeded):
    return KBStore(admin_pb)


@pytest.fixture
def tenant(store):
    return store.require_tenant("demo")


def outbox_for(admin_pb, tenant, slug):
    rows = admin_pb.all("outbox", filter=f"payload.tenant = {quote(tenant.id)} && payload.topic = {quote(slug)}")
    return [r["type"] for r in rows]


def test_topic_write_also_writes_outbox_row(store, tenant, admin_pb):
    store.create_topic(tenant, {"id": "store-test", "label": "Storetest", "type": "process", "description": "Een test."})
    store.update_topic(tenant, "store-test", {"label": "Storetest 2", "type": "process", "description": "Nog een."})
    assert store.topic(tenant, "store-test").label == "Storetest 2"
    store.add_relation(tenant, {"source": "store-test", "target": "pensioenadministrateur", "type": "executed_by"})
    removed = store.delete_topic(tenant, "store-test")
    assert removed == 1
    assert store.topic(tenant, "store-test") is None
    assert not [r for r in store.relations(tenant) if "store-test" in (r.source, r.target)]
    # one outbox row per topic write, written by PocketBase (pb_hooks), never a second one by the app
    assert outbox_for(admin_pb, tenant, "store-test") == [OUTBOX_UPSERT] * 2 + [OUTBOX_DELETE]


def test_duplicate_slug_is_refused_and_nothing_written(store, tenant, admin_pb):
    before = len(admin_pb.all("outbox"))
    with pytest.raises(KBError) as err:
        store.create_topic(tenant, {"id": "aow", "label": "AOW bis", "type": "concept", "description": "Dubbel."})
    assert "already exists" in str(err.value)
    assert len(admin_pb.all("outbox")) == before


def test_relation_needs_existing_endpoints_and_no_self_reference(store, tenant):
    with pytest.raises(KBError, match="unknown topic 'bestaat-niet'"):
        store.add_relation(tenant, {"source": "aow", "target": "bestaat-niet", "type": "related_to"})
    with pytest.raises(KBError, match="itself"):
        store.add_relation(tenant, {"source": "aow", "target": "aow", "type": "related_to"})
    with pytest.raises(KBError, match="not one of"):
        store.add_relation(tenant, {"source": "aow", "target": "franchise", "type": "owns"})


def test_relation_to_other_tenants_topic_is_refused(store, tenant):
    # "magazijnveiligheid" exists only in acme: for demo it is an unknown topic.
    acme = store.require_tenant("acme")
    assert any(t.slug == "magazijnveiligheid" for t in store.topics(acme))
    with pytest.raises(KBError, match="unknown topic"):
        store.add_relation(tenant, {"source": "aow", "target": "magazijnveiligheid", "type": "related_to"})


def test_same_slug_in_two_tenants_holds_different_content(store):
    demo = store.topic(store.require_tenant("demo"), "pensioenregeling")
    acme = store.topic(store.require_tenant("acme"), "pensioenregeling")
    assert demo.content != acme.content and "Acme" in acme.label


def test_batch_is_all_or_nothing(store, tenant, admin_pb):
    from r42_app.services.store.pb import BatchRequest, PBError

    good = BatchRequest.create("topics", {"tenant": tenant.id, "slug": "batch-ok", "label": "B", "type": "concept",
                                          "description": "d"})
    bad = BatchRequest.create("topics", {"tenant": tenant.id, "slug": "Not Kebab", "label": "B", "type": "concept",
                                         "description": "d"})
    with pytest.raises(PBError):
        admin_pb.batch([good, bad])
    assert store.topic(tenant, "batch-ok") is None


def test_delete_relation(store, tenant):
    store.add_relation(tenant, {"source": "aow", "target": "pensioenfonds", "type": "related_to"})
    store.delete_relation(tenant, Relation("aow", "pensioenfonds", "related_to"))
    assert Relation("aow", "pensioenfonds", "related_to") not in store.relations(tenant)
    with pytest.raises(KBError, match="does not exist"):
        store.delete_relation(tenant, Relation("aow", "pensioenfonds", "related_to"))


def test_seed_is_idempotent(admin_pb, seeded):
    from r42_app.services.store.seed import seed_demo
    from tests.conftest import DEMO_PASSWORD

    again = seed_demo(admin_pb, DEMO_PASSWORD, log=lambda _m: None)
    assert all(r.created == r.updated == r.relations_created == 0 for r in again)
    roles = {u["email"]: u["role"] for u in admin_pb.all("users")}
    assert roles["learner@example.com"] == "learner" and roles["admin@example.com"] == "admin"


def test_a_topic_deleted_with_more_relations_than_a_bulk_batch_is_all_or_nothing(store, admin_pb):
    """A topic's deletion (its relations, its document's sections, itself) is one transaction however many writes
    it takes: when PocketBase refuses one of them, none of its relations is gone. (Bulk writes go in batches of
    BULK_BATCH; a deletion of 61 writes must not be cut into two of them.)"""
    leaves = [{"id": f"blad-{i}", "label": f"Blad {i}", "type": "concept", "description": "Een blad."}
              for i in range(BULK_BATCH + 12)]
    store.import_document("veel-relaties", {
        "topics": [{"id": "stam", "label": "Stam", "type": "concept", "description": "De stam."}, *leaves],
        "relations": [{"source": "stam", "target": leaf["id"], "type": "related_to"} for leaf in leaves]})
    tenant = store.require_tenant("veel-relaties")
    real_batch = store.pb.batch
    try:
        last = store.pb.first("relations", f"tenant = {quote(tenant.id)} && target = {quote(leaves[-1]['id'])}")

        def batch_after_a_concurrent_delete(requests, files=None):
            admin_pb.delete("relations", last["id"])  # another admin removed one relation a moment before
            store.pb.batch = real_batch
            return real_batch(requests, files)

        store.pb.batch = batch_after_a_concurrent_delete
        with pytest.raises(KBError):
            store.delete_topic(tenant, "stam")
        assert store.topic(tenant, "stam") is not None
        assert len([r for r in store.relations(tenant) if r.source == "stam"]) == len(leaves) - 1
    finally:
        store.pb.batch = real_batch
        admin_pb.delete("tenants", tenant.id)
