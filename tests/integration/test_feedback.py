"""Thumbs up/down on answers (issue 16): stored with question, answer and citations for the tenant's admins;
PocketBase lets a user rate only as themselves in their own tenant, and only admins read ratings.
Issue 21, hole 5: for every writer, one rating per user and message, bounded texts and a rate per user."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from r42_app.core.chat_view import UIMessage
from r42_app.core.messages import msg
from r42_app.services.store.feedback import (
    FEEDBACK_PER_MINUTE,
    MAX_QUESTION,
    MAX_REASON,
    FeedbackError,
    FeedbackStore,
)
from r42_app.services.store.pb import PBError, PocketBase, quote
from r42_app.state.auth import AuthState
from r42_app.state.chat import ChatState
from tests.conftest import throwaway_user
from tests.integration.test_hole_pocketbase import reset_pocketbase_rate_limits
from tests.integration.test_state_guards import call, signed_in_root, substate

TOO_FAST = msg("feedback.too_fast")  # the catalogue's words, which pb_hooks/r42_rules.js sends too


@pytest.fixture
def ctx(pb_server, seeded, admin_pb):
    demo = admin_pb.first("tenants", 'slug = "demo"')
    acme = admin_pb.first("tenants", 'slug = "acme"')
    learner = pb_server.user("learner@example.com")
    me = learner.me()
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
    assert rows[1].citations == ["AOW"] and rows[1].user == "" and not rows[1].signed  # unsigned: nobody named
    store.record(demo["id"], me["id"], "down", "Wat is de AOW?", "De AOW is het basispensioen [ref:1].",
                 [{"slug": "aow", "label": "AOW"}], "m1", signed=True)  # "Zet mijn naam erbij"
    assert [(r.question, r.user, r.signed) for r in store.recent(demo["id"])][0] == \
        ("Wat is de AOW?", "Lotte de Leerling", True)
    with pytest.raises(FeedbackError):
        store.record(demo["id"], me["id"], "meh", "q", "a", [])
    with pytest.raises(FeedbackError):
        store.record(demo["id"], me["id"], "up", "q", "   ", [])


def test_pocketbase_holds_the_line_for_any_writer(ctx, pb_server, admin_pb):
    demo, acme, learner, me = ctx
    row = {"tenant": demo["id"], "user": me["id"], "rating": "up", "message_id": "m1", "question": "q", "answer": "a",
           "citations": []}
    learner.create("chat_feedback", row)  # as themselves, in their tenant: allowed
    someone_else = admin_pb.first("users", 'email = "admin@example.com"')["id"]
    for forged in ({**row, "tenant": acme["id"]}, {**row, "signer": someone_else}, {**row, "rating": "meh"}):
        with pytest.raises(PBError):
            learner.create("chat_feedback", forged)
    # (issue 44) who rated is a hidden field PocketBase sets from the token: a body naming someone else rates as
    # themselves
    learner.create("chat_feedback", {**row, "user": someone_else, "message_id": "m2"})
    assert {r["user"] for r in admin_pb.all("chat_feedback", filter=f"tenant = {quote(demo['id'])}")} == {me["id"]}
    assert learner.list("chat_feedback").get("items") == []  # learners never read ratings
    admin = pb_server.user("admin@example.com")
    assert len(admin.list("chat_feedback").get("items")) == 2  # the tenant's admin does
    assert pb_server.user("admin@acme.example").list("chat_feedback").get("items") == []  # nor another tenant's
    rows = admin_pb.all("chat_feedback", filter=f"tenant = {quote(demo['id'])}")
    with pytest.raises(PBError):
        learner.update("chat_feedback", rows[0]["id"], {"rating": "down"})


# -- issue 21: limits that hold for every writer ---------------------------------------------------------


@pytest.fixture
def rater(pb_server, seeded, admin_pb):
    """A throw-away learner of demo (the per-user rate must not spill into other tests): their REST
    client, record and tenant; PocketBase's per-IP counters are reset around the test."""
    reset_pocketbase_rate_limits(admin_pb)
    with throwaway_user(admin_pb, name="Beoordelaar", prefix="rater") as (email, row):
        yield pb_server.user(email), row, admin_pb.first("tenants", 'slug = "demo"')
        for r in admin_pb.all("chat_feedback", filter=f"user = {quote(row['id'])}"):
            admin_pb.delete("chat_feedback", r["id"])
    reset_pocketbase_rate_limits(admin_pb)


def ratings_of(admin_pb, user_id):
    return admin_pb.all("chat_feedback", filter=f"user = {quote(user_id)}", sort="created")


def rating(tenant_id, user_id, message_id, value="up", question="Wat is de AOW?", answer="Het basispensioen."):
    return {"tenant": tenant_id, "user": user_id, "rating": value, "message_id": message_id, "question": question,
            "answer": answer, "citations": [{"slug": "aow", "label": "AOW"}]}


def create(client: PocketBase, body) -> int:
    try:
        client.create("chat_feedback", body)
        return 200
    except PBError as exc:
        return exc.status


def test_a_burst_of_ratings_past_the_app_is_capped_per_user(rater, admin_pb):
    client, me, demo = rater
    with ThreadPoolExecutor(8) as pool:  # 70 at once, each for another answer
        statuses = list(pool.map(lambda i: create(client, rating(demo["id"], me["id"], f"burst-{i}")), range(70)))
    assert statuses.count(200) == FEEDBACK_PER_MINUTE and set(statuses) <= {200, 429}
    assert len(ratings_of(admin_pb, me["id"])) == FEEDBACK_PER_MINUTE  # nothing else stored
    reset_pocketbase_rate_limits(admin_pb)  # (past 60 the per-IP create limit answers too; the hook's count stays)
    with pytest.raises(PBError) as err:
        client.create("chat_feedback", rating(demo["id"], me["id"], "one-more"))
    assert err.value.status == 429 and err.value.message == TOO_FAST


def test_a_flood_of_big_ratings_stores_nothing(rater, admin_pb):
    """The attacker's rows: ~28 KB each (8,000 + 20,000 characters, the old maximums)."""
    client, me, demo = rater
    big = rating(demo["id"], me["id"], "", question="v" * 8000, answer="a" * 20000)
    statuses = [create(client, {**big, "message_id": f"big-{i}"}) for i in range(70)]
    assert set(statuses) <= {400, 429} and statuses[:FEEDBACK_PER_MINUTE + 5].count(400) == FEEDBACK_PER_MINUTE + 5
    # (refused for their size before they count against the hook's rate; PocketBase's per-IP create limit
    # answers 429 past 60)
    assert ratings_of(admin_pb, me["id"]) == []


def test_a_row_of_four_byte_characters_is_capped_by_its_size_and_the_app_cuts_to_fit(rater, admin_pb):
    """The attacker's second pass: 2,000 + 8,000 emoji are within the character caps but 40 KB."""
    client, me, demo = rater
    heavy = rating(demo["id"], me["id"], "emoji", question="🙂" * 2000, answer="🙂" * 8000)
    assert create(client, heavy) == 400 and ratings_of(admin_pb, me["id"]) == []
    FeedbackStore(admin_pb).record(demo["id"], me["id"], "down", "🙂" * 2000, "🙂" * 8000, [], "emoji-app")
    (row,) = ratings_of(admin_pb, me["id"])
    assert row["answer"].startswith("🙂") and len((row["question"] + row["answer"]).encode()) <= 20000


def test_the_app_is_held_to_the_same_rate_and_says_so_in_dutch(rater, admin_pb):
    """The app rates for users over its superuser connection: PocketBase counts the row's user."""
    _client, me, demo = rater
    store = FeedbackStore(admin_pb)
    for i in range(FEEDBACK_PER_MINUTE):
        store.record(demo["id"], me["id"], "up", "Vraag?", "Antwoord.", [], f"app-{i}")
    with pytest.raises(FeedbackError) as err:
        store.record(demo["id"], me["id"], "down", "Vraag?", "Antwoord.", [], "app-0")
    assert err.value.user_message == TOO_FAST
    stored = ratings_of(admin_pb, me["id"])
    assert len(stored) == FEEDBACK_PER_MINUTE and {r["rating"] for r in stored} == {"up"}  # app-0 kept its rating


@pytest.mark.anyio
async def test_the_chat_window_shows_the_refusal_and_keeps_the_thumb_unpressed(rater, admin_pb, app_env):
    _client, me, demo = rater
    store = FeedbackStore(admin_pb)
    for i in range(FEEDBACK_PER_MINUTE):  # the minute's ratings are used up (another tab, say)
        store.record(demo["id"], me["id"], "up", "Vraag?", "Antwoord.", [], f"tab-{i}")
    root = await signed_in_root(me["email"])
    chat = substate(root, ChatState)
    chat.messages = [UIMessage("q1", "user", "Wat is de AOW?"), UIMessage("a1", "assistant", "Het basispensioen.")]
    toast = await call(chat, ChatState.rate, "a1", "down")
    assert TOO_FAST in str(toast)
    assert chat.messages[1].rating == ""
    assert substate(root, AuthState).user_id == me["id"]
    assert len(ratings_of(admin_pb, me["id"])) == FEEDBACK_PER_MINUTE


def test_a_new_rating_replaces_the_old_one_for_every_writer(rater, admin_pb):
    client, me, demo = rater
    store = FeedbackStore(admin_pb)
    client.create("chat_feedback", rating(demo["id"], me["id"], "m-1", "up"))
    client.create("chat_feedback", rating(demo["id"], me["id"], "m-1", "down"))  # past the app
    store.record(demo["id"], me["id"], "up", "Wat is de AOW?", "Het basispensioen.", [], "m-2")  # the app
    client.create("chat_feedback", rating(demo["id"], me["id"], "m-2", "down"))  # and mixed
    with ThreadPoolExecutor(6) as pool:  # six at once for one message still end as one row
        list(pool.map(lambda v: create(client, rating(demo["id"], me["id"], "m-3", v)), ["up", "down"] * 3))
    stored = ratings_of(admin_pb, me["id"])
    assert sorted((r["message_id"], r["rating"]) for r in stored if r["message_id"] != "m-3") == \
        [("m-1", "down"), ("m-2", "down")]
    assert len([r for r in stored if r["message_id"] == "m-3"]) == 1


def test_an_oversized_or_anonymous_rating_is_refused_and_the_old_one_stays(rater, admin_pb):
    client, me, demo = rater
    client.create("chat_feedback", rating(demo["id"], me["id"], "m-1", "up"))
    before = ratings_of(admin_pb, me["id"])
    for bad in (rating(demo["id"], me["id"], "m-1", "down", question="v" * (MAX_QUESTION + 1)),
                rating(demo["id"], me["id"], "m-1", "down", answer="a" * 8001),
                rating(demo["id"], me["id"], "", "down")):  # no message: nothing to rate once
        with pytest.raises(PBError) as err:
            client.create("chat_feedback", bad)
        assert err.value.status == 400
    assert ratings_of(admin_pb, me["id"]) == before  # the earlier rating, as it was
    # the app cuts a long question (the user's text) and R42's long answer instead of losing the rating
    FeedbackStore(admin_pb).record(demo["id"], me["id"], "down", "v" * 5000, "a" * 30000, [], "m-1")
    (row,) = ratings_of(admin_pb, me["id"])
    assert row["rating"] == "down" and len(row["question"]) == MAX_QUESTION and len(row["answer"]) == 8000


# -- issue 25: a thumbs-down's optional reason -------------------------------------------------------------


def test_a_reason_is_added_to_the_users_own_thumbs_down_only(rater, admin_pb, pb_server):
    client, me, demo = rater
    store = FeedbackStore(admin_pb)
    store.record(demo["id"], me["id"], "down", "Wat is de AOW?", "Het basispensioen.", [], "r1")
    store.record(demo["id"], me["id"], "up", "Wat is indexatie?", "Verhoging.", [], "r2")
    assert store.add_reason(demo["id"], me["id"], "r1", "  Het noemt   de leeftijd niet.\n") is True
    assert store.add_reason(demo["id"], me["id"], "r2", "Geen duim omlaag") is False  # a thumbs-up gets none
    other = admin_pb.first("users", 'email = "learner@example.com"')
    assert store.add_reason(demo["id"], other["id"], "r1", "Van iemand anders") is False  # not their rating
    acme = admin_pb.first("tenants", 'slug = "acme"')
    assert store.add_reason(acme["id"], me["id"], "r1", "Andere tenant") is False
    with pytest.raises(FeedbackError) as err:
        store.add_reason(demo["id"], me["id"], "r1", "x" * (MAX_REASON + 1))
    assert err.value.user_message == msg("feedback.reason_too_long")
    by_message = {r["message_id"]: r for r in ratings_of(admin_pb, me["id"])}
    assert by_message["r1"]["reason"] == "Het noemt de leeftijd niet."  # the refused one left it as it was
    assert by_message["r2"]["reason"] == ""
    down = next(f for f in store.recent(demo["id"]) if f.question == "Wat is de AOW?")
    assert down.reason == "Het noemt de leeftijd niet."
    with pytest.raises(PBError):  # a user cannot write a reason (or anything) into a rating over the REST API
        client.update("chat_feedback", by_message["r1"]["id"], {"reason": "Eigen tekst"})


@pytest.mark.anyio
async def test_the_chat_asks_for_a_reason_after_a_thumbs_down_and_stores_it(rater, admin_pb, app_env):
    _client, me, _demo = rater
    root = await signed_in_root(me["email"])
    chat = substate(root, ChatState)
    chat.messages = [UIMessage("q1", "user", "Wat is de AOW?"), UIMessage("a1", "assistant", "Het basispensioen.")]
    await call(chat, ChatState.rate, "a1", "down")
    assert chat.reason_for == "a1"
    await call(chat, ChatState.send_reason, {"reason": "x" * (MAX_REASON + 1)})
    assert chat.reason_for == "a1"  # refused: the form stays, with the reason why in a toast
    await call(chat, ChatState.send_reason, {"reason": "Het klopt niet voor 1960."})
    assert chat.reason_for == ""
    assert [r["reason"] for r in ratings_of(admin_pb, me["id"])] == ["Het klopt niet voor 1960."]
    await call(chat, ChatState.rate, "a1", "up")  # changed their mind: a thumbs-up asks nothing
    assert chat.reason_for == "" and [r["rating"] for r in ratings_of(admin_pb, me["id"])] == ["up"]


# -- issue 44, finding 6: citations only of the shape R42 makes ------------------------------------------


REPORTED_SLUG = 'x) [Officiële bron: log opnieuw in](https://evil.example/login "r42:bron") ('


def test_a_learner_can_store_only_citations_r42_makes(rater, admin_pb):
    """The feedback page makes source chips of a rating's citations: over REST, with their own token, a learner may
    store only citations of R42's shape (a topic of their tenant, a passage anchor, a plain label)."""
    client, me, demo = rater
    forged = [
        [{"slug": REPORTED_SLUG, "label": "Officiële bron"}],  # the reported one
        [{"slug": "aow", "label": "AOW", "anchor": 'p-0123456789) [Log in](https://evil.example "r42:bron'}],
        [{"slug": "aow", "label": "AOW\n\n[Log opnieuw in](https://evil.example/login)"}],
        [{"slug": "aow", "label": "AOW", "href": "https://evil.example/login"}],
        [{"slug": "aow", "label": "A" * 201}],
        [{"slug": "aow", "label": " "}],
        [{"slug": "aow", "label": "AOW", "ref": "1"}],
        [{"slug": "bestaat-niet", "label": "Bestaat niet"}],
        [{"slug": "magazijnveiligheid", "label": "Magazijnveiligheid"}],  # acme's topic, not demo's
        {"slug": "aow", "label": "AOW"},
        ["aow"],
        [{"slug": "aow", "label": "AOW"}] * 11,
    ]
    for i, citations in enumerate(forged):
        with pytest.raises(PBError) as err:
            client.create("chat_feedback", {**rating(demo["id"], me["id"], f"forged-{i}"), "citations": citations})
        assert err.value.status == 400, citations
    assert ratings_of(admin_pb, me["id"]) == []

    good = [{"ref": 1, "slug": "aow", "label": "AOW", "anchor": "p-0123456789"},
            {"ref": 2, "slug": "arbeidsongeschiktheidspensioen", "label": "Reglement (2024) & <uitleg>, p. 5–6"}]
    client.create("chat_feedback", {**rating(demo["id"], me["id"], "good"), "citations": good})
    client.create("chat_feedback", {**rating(demo["id"], me["id"], "none"), "citations": []})
    assert [r["citations"] for r in ratings_of(admin_pb, me["id"])] == [good, []]


def test_the_app_stores_only_citations_of_r42s_shape_from_the_browsers_thread(rater, admin_pb):
    """The app writes ratings over its superuser connection, with the citations of the answer as the browser's
    stored thread holds them: a forged one is left out there, and the rating is kept."""
    _client, me, demo = rater
    FeedbackStore(admin_pb).record(demo["id"], me["id"], "up", "Wat is de AOW?", "De AOW [ref:1] [ref:2].",
                                   [{"ref": 1, "slug": REPORTED_SLUG, "label": "Officiële bron"},
                                    {"ref": 2, "slug": "aow", "label": "AOW", "anchor": "p-0123456789"}], "thread")
    (row,) = ratings_of(admin_pb, me["id"])
    assert row["citations"] == [{"ref": 2, "slug": "aow", "label": "AOW", "anchor": "p-0123456789"}]
