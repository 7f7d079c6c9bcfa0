"""The migrations create every collection, and PocketBase's API rules enforce tenants and roles
even for someone who talks to PocketBase directly with their own token."""

import pytest

from r42_app.services.store.pb import PBError, PocketBase, quote

COLLECTIONS = ["tenants", "users", "topics", "relations", "suggestions", "chatbot_access", "ai_cost_events",
               "outbox", "audit_log", "quiz_sessions"]
SUPERUSER_ONLY = ["ai_cost_events", "outbox", "audit_log"]


@pytest.fixture(scope="module")
def collections(admin_pb):
    return {c["name"]: c for c in admin_pb.send("GET", "/api/collections", params={"perPage": 100})["items"]}


def test_migrations_create_every_collection(collections):
    assert set(COLLECTIONS) <= set(collections)
    assert {"tenant", "role"} <= {f["name"] for f in collections["users"]["fields"]}


def test_topics_slug_is_unique_per_tenant(collections):
    assert any("UNIQUE" in idx and "(tenant, slug)" in idx for idx in collections["topics"]["indexes"])


@pytest.mark.parametrize("name", SUPERUSER_ONLY)
def test_cost_outbox_and_audit_are_superuser_only(collections, name):
    rules = [collections[name][k] for k in ("listRule", "viewRule", "createRule", "updateRule", "deleteRule")]
    assert rules == [None] * 5


def test_no_self_sign_up(pb_server, seeded, admin_pb):
    """Nobody makes their own account: only an admin invites, into their own tenant (issue 46, test_people.py)."""
    demo = admin_pb.first("tenants", 'slug = "demo"')
    body = {"email": "zelf@example.com", "password": "een-goed-wachtwoord", "passwordConfirm": "een-goed-wachtwoord",
            "name": "Zelf", "role": "admin", "tenant": demo["id"], "state": "invited"}
    for client in (PocketBase(pb_server.url), pb_server.user("learner@example.com")):
        with pytest.raises(PBError) as refused:
            client.create("users", body)
        assert refused.value.status in (400, 403)
    assert admin_pb.first("users", 'email = "zelf@example.com"') is None


def _demo_topic(admin_pb, tenant_slug, slug):
    tenant = admin_pb.first("tenants", f"slug = {quote(tenant_slug)}")
    return tenant, admin_pb.first("topics", f"tenant = {quote(tenant['id'])} && slug = {quote(slug)}")


def test_learner_reads_only_own_tenant(pb_server, seeded, admin_pb):
    learner = pb_server.user("learner@example.com")
    slugs_seen = {t["tenant"] for t in learner.all("topics")}
    demo, _ = _demo_topic(admin_pb, "demo", "pensioenregeling")
    assert slugs_seen == {demo["id"]}
    acme, acme_topic = _demo_topic(admin_pb, "acme", "pensioenregeling")
    with pytest.raises(PBError) as err:
        learner.get("topics", acme_topic["id"])
    assert err.value.status == 404
    assert learner.all("relations", filter=f"tenant = {quote(acme['id'])}") == []
    assert [t["slug"] for t in learner.all("tenants")] == ["demo"]


def test_learner_cannot_write_topics_or_relations(pb_server, seeded, admin_pb):
    learner = pb_server.user("learner@example.com")
    demo, topic = _demo_topic(admin_pb, "demo", "partnerpensioen")
    with pytest.raises(PBError) as err:
        learner.create("topics", {"tenant": demo["id"], "slug": "hack", "label": "Hack", "type": "concept",
                                  "description": "x"})
    assert err.value.status in (400, 403)
    with pytest.raises(PBError):
        learner.update("topics", topic["id"], {"label": "Gehackt"})
    with pytest.raises(PBError):
        learner.delete("topics", topic["id"])
    rel = admin_pb.first("relations", f"tenant = {quote(demo['id'])}")
    with pytest.raises(PBError):
        learner.create("relations", {"tenant": demo["id"], "source": "aow", "target": "franchise", "type": "related_to"})
    with pytest.raises(PBError):
        learner.delete("relations", rel["id"])
    assert admin_pb.get("topics", topic["id"])["label"] == topic["label"]
    assert admin_pb.first("topics", 'slug = "hack"') is None
    assert admin_pb.get("relations", rel["id"])


def test_admin_writes_own_tenant_but_never_acme(pb_server, seeded, admin_pb):
    admin = pb_server.user("admin@example.com")
    demo, _ = _demo_topic(admin_pb, "demo", "aow")
    acme, acme_topic = _demo_topic(admin_pb, "acme", "pensioenregeling")
    created = admin.create("topics", {"tenant": demo["id"], "slug": "rule-test", "label": "Regeltest",
                                      "type": "concept", "description": "Tijdelijk."})
    admin.update("topics", created["id"], {"label": "Regeltest 2"})
    with pytest.raises(PBError):
        admin.update("topics", created["id"], {"tenant": acme["id"]})  # moving a topic to acme
    assert admin_pb.get("topics", created["id"])["tenant"] == demo["id"]
    admin.delete("topics", created["id"])
    with pytest.raises(PBError):
        admin.create("topics", {"tenant": acme["id"], "slug": "inbraak", "label": "Inbraak", "type": "concept",
                                "description": "x"})
    with pytest.raises(PBError) as err:
        admin.update("topics", acme_topic["id"], {"label": "Overgenomen"})
    assert err.value.status == 404
    with pytest.raises(PBError):
        admin.delete("topics", acme_topic["id"])
    assert admin_pb.get("topics", acme_topic["id"])["label"] == acme_topic["label"]
    assert admin_pb.first("topics", 'slug = "inbraak"') is None


def test_learner_files_only_own_suggestions(pb_server, seeded, admin_pb):
    learner = pb_server.user("learner@example.com")
    admin_user = admin_pb.first("users", 'email = "admin@example.com"')
    me = learner.me()
    delta = {"reason": "test", "topics": [{"id": "eigen-voorstel", "label": "Eigen voorstel", "type": "concept",
                                           "description": "Een test."}], "relations": []}
    row = learner.create("suggestions", {"tenant": me["tenant"], "user": me["id"], "delta": delta,
                                         "reason": "test", "status": "pending"})
    assert row["status"] == "pending"
    with pytest.raises(PBError):  # in someone else's name
        learner.create("suggestions", {"tenant": me["tenant"], "user": admin_user["id"], "delta": delta,
                                       "reason": "x", "status": "pending"})
    with pytest.raises(PBError):  # pre-approved
        learner.create("suggestions", {"tenant": me["tenant"], "user": me["id"], "delta": delta, "reason": "x",
                                       "status": "approved"})
    with pytest.raises(PBError):
        learner.update("suggestions", row["id"], {"status": "approved"})
    admin_pb.delete("suggestions", row["id"])


@pytest.mark.parametrize("name", SUPERUSER_ONLY)
def test_users_cannot_touch_superuser_collections(pb_server, seeded, name):
    admin = pb_server.user("admin@example.com")
    with pytest.raises(PBError) as err:
        admin.list(name)
    assert err.value.status == 403


def test_users_cannot_promote_themselves(pb_server, seeded, admin_pb):
    learner = pb_server.user("learner@example.com")
    me = learner.me()
    with pytest.raises(PBError):
        learner.update("users", me["id"], {"role": "admin"})
    assert admin_pb.get("users", me["id"])["role"] == "learner"


def test_users_see_only_own_quiz_sessions_and_access_rows(pb_server, seeded, admin_pb):
    learner = pb_server.user("learner@example.com")
    other = admin_pb.first("users", 'email = "learner@acme.example"')
    row = admin_pb.create("quiz_sessions", {"tenant": other["tenant"], "user": other["id"], "active": True,
                                            "started": "2026-01-01 10:00:00Z", "expires": "2026-01-01 10:30:00Z"})
    access = admin_pb.create("chatbot_access", {"tenant": other["tenant"], "user": other["id"], "overrides": {}})
    try:
        own_id = learner.me()["id"]
        visible = learner.all("quiz_sessions")  # the learner's own sessions only (other tests may leave ended ones)
        assert row["id"] not in {r["id"] for r in visible} and all(r["user"] == own_id for r in visible)
        assert learner.all("chatbot_access") == []
        with pytest.raises(PBError):
            learner.create("quiz_sessions", {"tenant": other["tenant"], "user": other["id"], "active": False,
                                             "started": "2026-01-01 10:00:00Z", "expires": "2026-01-01 10:30:00Z"})
        assert pb_server.user("learner@acme.example").all("quiz_sessions")[0]["id"] == row["id"]
    finally:
        admin_pb.delete("quiz_sessions", row["id"])
        admin_pb.delete("chatbot_access", access["id"])


def test_superuser_password_never_reads_as_a_flag(tmp_path):
    """Generated passwords are alphanumeric, and a stored one that starts with "-" (written by an
    earlier version, 1 in 32 data dirs) still works: `r42 serve` once failed to start on such a dir."""
    import json as _json
    import string

    from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
    from r42_app.services.store.pb import PocketBase
    from tests.conftest import free_port

    fresh = ensure_superuser(tmp_path / "a" / "pb_data", tmp_path / "a.json")
    assert len(fresh.password) >= 32 and set(fresh.password) <= set(string.ascii_letters + string.digits)
    creds_file = tmp_path / "b.json"
    creds_file.write_text(_json.dumps({"email": "superuser@r42.local", "password": "-starts-with-a-dash-0123456789"}))
    creds = ensure_superuser(tmp_path / "b" / "pb_data", creds_file)
    server = PocketBaseServer(tmp_path / "b" / "pb_data", free_port()).start()
    try:
        pb = PocketBase(server.url).as_superuser(creds.email, creds.password)  # the password really is that one
        assert pb.token
        pb.close()
    finally:
        server.stop()
