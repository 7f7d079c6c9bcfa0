"""Thumbs up/down on answers (issue 16): stored with question, answer and citations for the tenant's admins;
PocketBase lets a user rate only as themselves in their own tenant, and only admins read ratings."""

import pytest

from r42_app.services.feedback import FeedbackError, FeedbackStore
from r42_app.services.pb import PBError, quote


@pytest.fixture
def ctx(pb_server, seeded, admin_pb):
    demo = admin_pb.first("tenants", 'slug = "demo"')
    acme = admin_pb.first("tenants", 'slug = "acme"')
    learner = pb_server.user("learner@example.com")
    me = learner.send("POST", "/api/collections/users/auth-refresh")["record"]
    yield demo, acme, learner, me
    for row in admin_pb.all("chat_feedback"):
        admin_pb.delete("chat_feedback", row["id"])


def test_a_rating_is_stored_once_per_answer_and_admins_read_it_newest_first(ctx, admin_pb):
    demo, _acme, _learner, me = ctx
    store = FeedbackStore(admin_pb)
    store.record(demo["id"], me["id"], "up", "Wat is de AOW?", "De AOW is het basispensioen [ref:1].",
                 [{"slug": "aow", "label": "AOW"}], "m1")
    store.record(demo["id"], me["id"], "down", "Wat is de AOW?", "De AOW is het basispensioen [ref:1].",
                 [{"slug": "aow", "label": "AOW"}], "m1")  # changed their mind: replaces, not adds
    store.record(demo["id"], me["id"], "up", "Wat is indexatie?", "Indexatie is ...", [], "m2")
    rows = store.recent(demo["id"])
    assert [(r.rating, r.question) for r in rows] == [("up", "Wat is indexatie?"), ("down", "Wat is de AOW?")]
    assert rows[1].citations == ["AOW"] and rows[1].user == "Lotte de Leerling"
    with pytest.raises(FeedbackError):
        store.record(demo["id"], me["id"], "meh", "q", "a", [])
    with pytest.raises(FeedbackError):
        store.record(demo["id"], me["id"], "up", "q", "   ", [])


def test_pocketbase_holds_the_line_for_any_writer(ctx, pb_server, admin_pb):
    demo, acme, learner, me = ctx
    row = {"tenant": demo["id"], "user": me["id"], "rating": "up", "question": "q", "answer": "a", "citations": []}
    learner.create("chat_feedback", row)  # as themselves, in their tenant: allowed
    someone_else = admin_pb.first("users", 'email = "admin@example.com"')["id"]
    for forged in ({**row, "tenant": acme["id"]}, {**row, "user": someone_else}, {**row, "rating": "meh"}):
        with pytest.raises(PBError):
            learner.create("chat_feedback", forged)
    assert learner.list("chat_feedback").get("items") == []  # learners never read ratings
    admin = pb_server.user("admin@example.com")
    assert len(admin.list("chat_feedback").get("items")) == 1  # the tenant's admin does
    assert pb_server.user("admin@acme.example").list("chat_feedback").get("items") == []  # nor another tenant's
    rows = admin_pb.all("chat_feedback", filter=f"tenant = {quote(demo['id'])}")
    with pytest.raises(PBError):
        learner.update("chat_feedback", rows[0]["id"], {"rating": "down"})
