"""GraphState and QuizState driven as Reflex would run their handlers (no browser), against the real
PocketBase: who sees pending suggestions, tenant isolation, and quiz input that must be ignored."""

import json
from pathlib import Path

import pytest

from r42_app.core.delta import GraphSnapshot, validate_delta
from r42_app.core.messages import nl_number
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.quiz_store import QuizStore
from r42_app.services.store.suggestions import SuggestionStore
from r42_app.state.graph import GraphState
from r42_app.state.quiz import QuizState
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio

SEED = Path(__file__).resolve().parents[2] / "r42_app" / "seed_data"
ACME, DEMO = ({t["id"]: t for t in json.loads((SEED / f"{name}.json").read_text())["topics"]} for name in ("acme", "demo"))


@pytest.fixture
def pending(admin_pb, seeded, app_env):
    """One pending learner suggestion in tenant demo (removed afterwards)."""
    kb = KBStore(admin_pb)
    demo = kb.require_tenant("demo")
    snapshot = kb.load(demo)
    delta = validate_delta({"reason": "Test.", "topics": [{"id": "state-graph-node", "label": "State graph node",
                                                           "type": "concept", "description": "Alleen een test."}],
                            "relations": [{"source": "state-graph-node", "target": "aow", "type": "related_to"}]},
                           GraphSnapshot(snapshot.topics, snapshot.relations))
    learner = admin_pb.first("users", 'email = "learner@example.com"')
    row = SuggestionStore(admin_pb, kb).append_suggestion(demo, learner["id"], delta)
    yield row
    admin_pb.delete("suggestions", row.id)


async def loaded_graph(email):
    graph = substate(await signed_in_root(email), GraphState)
    await call(graph, GraphState.load)
    assert graph.load_error == "" and not graph.loading
    return graph


async def test_admins_see_pending_suggestions_learners_do_not(pending):
    admin = await loaded_graph("admin@example.com")
    ids = {n["id"]: n for n in admin.nodes}
    assert ids["state-graph-node"]["pending"] is True and admin.show_pending
    assert {"source": "state-graph-node", "target": "aow", "type": "related_to", "pending": True,
            "label": "hangt samen met"} in admin.links  # the Dutch words the graph writes on the link
    await call(admin, GraphState.select, "state-graph-node")
    assert admin.panel.pending and admin.panel.description == "Alleen een test."

    learner = await loaded_graph("learner@example.com")
    assert "state-graph-node" not in {n["id"] for n in learner.nodes}
    assert not learner.show_pending and not any(link["pending"] for link in learner.links)
    await call(learner, GraphState.select, "state-graph-node")  # a client sending a pending id gets nothing
    assert learner.selected == "" and learner.panel.label == ""


async def test_graph_is_per_tenant_and_search_and_panel_stay_inside_it(app_env, seeded):
    acme = await loaded_graph("learner@acme.example")
    assert "aow" not in {n["id"] for n in acme.nodes} and acme.topic_count == len(acme.nodes) == 12
    assert acme.counts == "12 onderwerpen · 20 relaties" and nl_number(2000) == "2.000"
    await call(acme, GraphState.select, "aow")  # a demo slug
    assert acme.panel.label == ""
    await call(acme, GraphState.set_query, "dekkingsgraad")
    assert acme.hits == []
    await call(acme, GraphState.select, "pensioenregeling")  # both tenants have this slug: acme gets its own
    assert acme.panel.description == ACME["pensioenregeling"]["description"] != DEMO["pensioenregeling"]["description"]


async def test_quiz_ignores_answers_that_are_not_options_and_only_its_own_tab_ends_it(app_env, seeded, admin_pb):
    root = await signed_in_root("learner@example.com")
    quiz = substate(root, QuizState)
    store = QuizStore(admin_pb)
    user_id = admin_pb.first("users", 'email = "learner@example.com"')["id"]
    try:
        await call(quiz, QuizState.set_scope, "nonsense")
        assert quiz.scope == "all"
        await call(quiz, QuizState.start)
        assert quiz.phase == "questions" and len(quiz.questions) == 8 and store.active(user_id)
        await call(quiz, QuizState.next)  # nothing chosen: stays
        assert quiz.index == 0
        await call(quiz, QuizState.choose, "An answer that is not an option")
        assert quiz.choice == ""
        other_tab = substate(await signed_in_root("learner@example.com"), QuizState)
        await call(other_tab, QuizState.load)
        await call(other_tab, QuizState.shown)
        await call(other_tab, QuizState.leave)
        await call(other_tab, QuizState.stop)
        assert store.active(user_id)  # another tab cannot end this quiz
        for i in range(8):  # right on even questions, wrong on odd ones
            key = quiz._key[quiz.index]
            right = key.options[key.answer]
            pick = right if i % 2 == 0 else next(o for o in key.options if o != right)
            await call(quiz, QuizState.choose, pick)
            await call(quiz, QuizState.next)  # checked: right or wrong is shown, the choice is locked
            assert quiz.revealed and quiz.right_answer == right and quiz.was_right == (i % 2 == 0)
            await call(quiz, QuizState.next)  # the second click of a double click: the verdict stays
            assert quiz.revealed and quiz.index == i
            quiz._revealed_at -= 1  # (as if the learner read it for a second)
            await call(quiz, QuizState.choose, next(o for o in key.options if o != pick))
            assert quiz.choice == pick
            await call(quiz, QuizState.next)
        assert quiz.phase == "result" and quiz.total == 8 and len(quiz.reviews) == 8
        assert quiz.correct == 4
        assert not store.active(user_id)
    finally:
        store.end(user_id)


@pytest.mark.parametrize("how", ["ended", "expired"])
async def test_an_attempt_whose_session_ended_takes_no_more_answers(app_env, seeded, admin_pb, how):
    """Issue 10, hole 3: ending the session (any path) or letting it expire ends the attempt: the next
    answer shows the reason, no score is computed, and the answer key is gone from the state."""
    quiz = substate(await signed_in_root("learner@example.com"), QuizState)
    store = QuizStore(admin_pb)
    user_id = admin_pb.first("users", 'email = "learner@example.com"')["id"]
    try:
        await call(quiz, QuizState.start)
        await call(quiz, QuizState.choose, quiz.current.options[0])
        await call(quiz, QuizState.next)
        quiz._revealed_at -= 1
        await call(quiz, QuizState.next)
        assert quiz.index == 1
        if how == "ended":
            assert store.end(user_id) == 1  # what POST /api/quiz/end does
        else:
            row = admin_pb.first("quiz_sessions", f'user = "{user_id}" && active = true')
            admin_pb.update("quiz_sessions", row["id"], {"expires": "2020-01-01 00:00:00.000Z"})
        await call(quiz, QuizState.choose, quiz.current.options[0])
        await call(quiz, QuizState.next)
        assert quiz.phase == "ended" and quiz.total == 0 and quiz.reviews == []
        assert ("elders beëindigd" if how == "ended" else "tijd is om") in quiz.ended_reason
        assert quiz.questions == [] and quiz._key == []
        await call(quiz, QuizState.next)  # nothing more to answer
        assert quiz.phase == "ended" and not store.active(user_id)
    finally:
        store.end(user_id)


async def test_a_reload_or_leaving_mid_quiz_ends_the_attempt_and_says_so(app_env, seeded, admin_pb):
    quiz = substate(await signed_in_root("learner@example.com"), QuizState)
    store = QuizStore(admin_pb)
    user_id = admin_pb.first("users", 'email = "learner@example.com"')["id"]
    try:
        await call(quiz, QuizState.start)
        await call(quiz, QuizState.load)  # on_load again without a page view: a websocket reconnect
        assert quiz.phase == "questions" and store.active(user_id)  # the quiz goes on
        await call(quiz, QuizState.load)
        await call(quiz, QuizState.shown)  # the same tab shows /testen again: a reload
        assert quiz.phase == "ended" and "opnieuw werd geladen" in quiz.ended_reason
        assert quiz._key == [] and not store.active(user_id)
        await call(quiz, QuizState.start)
        await call(quiz, QuizState.leave)  # navigating away inside the app
        assert not store.active(user_id)
        await call(quiz, QuizState.shown)  # coming back says why the attempt is gone, once
        assert quiz.phase == "ended" and "toetspagina verliet" in quiz.ended_reason
        await call(quiz, QuizState.shown)
        assert quiz.phase == "intro"
    finally:
        store.end(user_id)
