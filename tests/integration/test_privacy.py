"""The privacy rule (issue 44, finding 4): admins see what was asked and rated, never who, unless the learner chose to
sign a rating. The attacker's side door: `/admin/feedback` named the learner with the rated question, the question
log's row of that answer could be joined to the rating, and `/admin/gaps` grouped the learner's other questions as
"gevraagd door 1 leerling". Driven as the admin would: the page states as Reflex runs them, and PocketBase's REST API
with the admin's own token, against the real PocketBase (and the embedding model for the gaps)."""

import dataclasses
import json
import uuid

import pytest

from r42_app.container import services
from r42_app.core.chat_view import UIMessage
from r42_app.core.messages import msg
from r42_app.core.questions import QuestionEntry
from r42_app.services.store.pb import PBError
from r42_app.state.chat import ChatState
from r42_app.state.feedback import FeedbackState
from r42_app.state.gaps import GapsState
from tests.conftest import throwaway_user
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio

BURN_OUT = "Ik zit thuis met een burn-out, hoe lang krijg ik mijn salaris doorbetaald?"
AOW = "Vanaf welke leeftijd krijg ik AOW?"
OTHER = "Mag ik mijn pensioen eerder laten ingaan als ik ziek ben?"


@pytest.fixture
def rater(admin_pb, seeded, app_env):
    """A learner of demo who asked three questions (in the question log)."""
    tag = uuid.uuid4().hex[:6]
    name = f"Noor Naamloos {tag}"
    with throwaway_user(admin_pb, name=name, prefix="privacy") as (email, row):
        log = services().questions
        for question in (OTHER, BURN_OUT, AOW):
            log.record(QuestionEntry(row["tenant"], log.user_key(row["tenant"], row["id"]), question))
        yield email, name, row
        for r in admin_pb.all("chat_feedback", filter=f'user = "{row["id"]}"'):
            admin_pb.delete("chat_feedback", r["id"])
        for r in admin_pb.all("question_log", filter=f'user_key = "{log.user_key(row["tenant"], row["id"])}"'):
            admin_pb.delete("question_log", r["id"])


async def rate_unsigned(email):
    """The learner's chat window: a thumbs down on the burn-out answer, as the window rates by default."""
    chat = substate(await signed_in_root(email), ChatState)
    chat.messages = [UIMessage("q1", "user", BURN_OUT), UIMessage("a1", "assistant", "Twee jaar, bij ziekte."),
                     UIMessage("q2", "user", AOW), UIMessage("a2", "assistant", "Vanaf 67 jaar.")]
    await call(chat, ChatState.rate, "a1", "down")
    return chat


async def rate_signed(chat):
    """Then "Zet mijn naam erbij" (off until the learner turns it on) and a thumbs up on the AOW answer."""
    assert chat.sign_ratings is False
    await call(chat, ChatState.set_sign_ratings, True)
    await call(chat, ChatState.rate, "a2", "up")


def identifies(value, *needles) -> list[str]:
    """The needles (id, e-mail, name, key) that occur in `value`, as JSON, ignoring case."""
    text = json.dumps(value, ensure_ascii=False).lower()
    return [n for n in needles if n and n.lower() in text]


async def test_the_feedback_page_names_only_the_learner_who_signed(rater, admin_pb):
    email, name, row = rater
    chat = await rate_unsigned(email)
    admin = substate(await signed_in_root("admin@example.com"), FeedbackState)
    await call(admin, FeedbackState.load)
    [unsigned] = [r for r in admin.rows if r.question == BURN_OUT]
    assert identifies(dataclasses.asdict(unsigned), row["id"], email, name) == []  # nowhere in what the page holds
    assert unsigned.user == msg("feedback.unsigned") and not unsigned.signed
    await rate_signed(chat)
    await call(admin, FeedbackState.load)
    [signed] = [r for r in admin.rows if r.question == AOW]
    assert signed.user == name and signed.signed  # the learner chose to sign this one


async def test_an_admin_token_cannot_learn_who_gave_an_unsigned_rating(rater, admin_pb, pb_server):
    email, name, row = rater
    chat = await rate_unsigned(email)
    admin = pb_server.user("admin@example.com")
    items = admin.list("chat_feedback", filter=f'question = "{BURN_OUT}"', expand="user,signer").get("items")
    assert len(items) == 1 and admin_pb.get("chat_feedback", items[0]["id"])["user"] == row["id"]  # (it is hers)
    assert identifies(items, row["id"], email, name) == []  # no user, no expanded user, no signer
    for probe in (f'user = "{row["id"]}"', f'user.name ~ "{name}"', 'user ~ "a"'):  # nor by asking around it
        with pytest.raises(PBError) as refused:
            admin.list("chat_feedback", filter=probe)
        assert refused.value.status == 400, probe
    with pytest.raises(PBError):
        admin.list("chat_feedback", sort="user")
    learners = admin.list("users", filter=f'id = "{row["id"]}"', expand="chat_feedback_via_user").get("items")
    assert learners and "expand" not in learners[0]  # nor from the user's side
    with pytest.raises(PBError):
        admin.list("users", filter=f'chat_feedback_via_user.question ~ "{BURN_OUT[:20]}"')
    await rate_signed(chat)
    [signed] = admin.list("chat_feedback", filter=f'question = "{AOW}"', expand="signer").get("items")
    assert signed["signer"] == row["id"] and signed["expand"]["signer"]["name"] == name  # signed: named


async def test_the_question_log_row_of_a_rated_answer_cannot_be_joined_to_the_rater(rater, admin_pb, pb_server):
    email, name, row = rater
    await rate_unsigned(email)
    key = services().questions.user_key(row["tenant"], row["id"])
    [logged] = admin_pb.all("question_log", filter=f'question = "{BURN_OUT}" && user_key = "{key}"')
    assert logged["feedback"] == "down"  # (the app's view) the gaps report still counts the thumbs down
    admin = pb_server.user("admin@example.com")
    [rating] = admin.list("chat_feedback", filter=f'question = "{BURN_OUT}"').get("items")
    assert identifies(rating, row["id"], email, name, key) == [] and "user" not in rating and rating["signer"] == ""
    # the raw log is the app's alone: its rows came in the order and at the second they were asked, so one rating
    # (or one question naming its asker) pointed at the questions just before and after it; by id, by filter, by a
    # hidden field: nothing
    for probe in ("", f'question = "{BURN_OUT}"', f'question = "{OTHER}"', f'user_key = "{key}"', 'feedback = "down"'):
        with pytest.raises(PBError) as refused:
            admin.list("question_log", filter=probe)
        assert refused.value.status == 403, probe
    with pytest.raises(PBError) as refused:
        admin.get("question_log", logged["id"])
    assert refused.value.status in (403, 404)


@pytest.fixture
def gaps_tenant(admin_pb, seeded, app_env):
    """A tenant of its own, its admin, and a question log: three burn-out questions of one learner, and three
    parking questions of four learners."""
    tenant = admin_pb.create("tenants", {"slug": f"privacy-{uuid.uuid4().hex[:6]}", "name": "Privacy Test",
                                         "chatbot_enabled": True})
    log = services().questions
    keys = [log.user_key(tenant["id"], f"learner{i}") for i in range(4)]
    for q in ("Ik heb een burn-out, krijg ik mijn salaris doorbetaald?",
              "Hoe lang mag ik thuisblijven met een burn-out?",
              "Wie betaalt mijn loon als ik overspannen thuis zit?"):
        log.record(QuestionEntry(tenant["id"], keys[0], q))
    for i, q in enumerate(("Waar kan ik parkeren bij het kantoor?", "Is er een parkeerplaats voor personeel?",
                           "Moet ik betalen om te parkeren bij het werk?", "Waar mogen medewerkers hun auto kwijt?")):
        log.record(QuestionEntry(tenant["id"], keys[i], q))
    with throwaway_user(admin_pb, role="admin", prefix="privacy-admin", tenant_slug=tenant["slug"]) as (email, _):
        yield email
    admin_pb.delete("tenants", tenant["id"])


async def test_the_gaps_page_never_shows_a_count_that_singles_one_learner_out(gaps_tenant):
    gaps = substate(await signed_in_root(gaps_tenant), GapsState)
    await call(gaps, GapsState.load)
    assert gaps.load_error == "" and len(gaps.rows) == 2, [r.title for r in gaps.rows]
    by_subject = {any("parkeer" in q.short for q in r.examples): r for r in gaps.rows}
    burn_out, parking = by_subject[False], by_subject[True]
    assert burn_out.count == 3 and parking.count == 4
    # what the browser receives of a group holds no number of learners, only the words, and those from 3 on
    assert [dataclasses.asdict(r).get("learners") for r in (burn_out, parking)] == [None, None]
    assert burn_out.askers == msg("gaps.askers_few", minimum=3) == "door minder dan 3 leerlingen"
    assert parking.askers == msg("gaps.askers", count=4) == "door 4 verschillende leerlingen"

