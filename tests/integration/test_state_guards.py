"""Admin event handlers check the role on the server: calling them directly as a learner is refused.

These drive the real Reflex State classes (no browser) against the real PocketBase.
"""

import inspect

import pytest
import reflex as rx

from r42_app.services.store.kb_store import KBStore
from r42_app.state.admin_topics import AdminTopicEditorState, AdminTopicListState
from r42_app.state.auth import AuthState
from r42_app.state.learn import LearnState
from tests.conftest import DEMO_PASSWORD

pytestmark = pytest.mark.anyio


def substate(root, cls):
    return root.get_substate(cls.get_full_name().split(".")[1:])


async def call(state, handler, *args):
    """Run an event handler as Reflex would, draining generator handlers; returns what it emitted."""
    result = handler.fn(state, *args)
    if inspect.isasyncgen(result):
        return [item async for item in result]
    if inspect.iscoroutine(result):
        return await result
    return result


async def signed_in_root(email):
    root = rx.State(_reflex_internal_init=True)
    auth = substate(root, AuthState)
    await call(auth, AuthState.sign_in, {"email": email, "password": DEMO_PASSWORD})
    assert auth.signin_error == "" and auth.signed_in
    return root


@pytest.fixture
def store(admin_pb, seeded, app_env):
    return KBStore(admin_pb)


async def test_learner_calling_admin_handlers_is_refused(store):
    root = await signed_in_root("learner@example.com")
    topic_list, admin_state = substate(root, AdminTopicListState), substate(root, AdminTopicEditorState)
    demo = store.require_tenant("demo")
    before = store.topic(demo, "aow")
    relations_before = store.relations(demo)

    emitted = await call(topic_list, AdminTopicListState.delete_topic, "aow")
    assert "Alleen beheerders" in str(emitted)
    await call(topic_list, AdminTopicListState.load_list)
    assert topic_list.forbidden and topic_list.rows == []

    admin_state.f_slug, admin_state.f_label, admin_state.f_type = "aow", "Overschreven", "concept"
    admin_state.f_description, admin_state.is_new = "x", False
    emitted = await call(admin_state, AdminTopicEditorState.save)
    assert "Alleen beheerders" in str(emitted)
    await call(admin_state, AdminTopicEditorState.remove_relation, relations_before[0].source, relations_before[0].target,
               relations_before[0].type)

    assert store.topic(demo, "aow") == before
    assert store.relations(demo) == relations_before


async def test_admin_handler_writes_only_in_own_tenant(store):
    acme_root = await signed_in_root("admin@acme.example")
    acme_admin = substate(acme_root, AdminTopicListState)
    await call(acme_admin, AdminTopicListState.delete_topic, "aow")  # a demo slug, unknown in acme
    assert store.topic(store.require_tenant("demo"), "aow") is not None

    root = await signed_in_root("admin@example.com")
    admin_state = substate(root, AdminTopicEditorState)
    await call(admin_state, AdminTopicEditorState.load_new)
    await call(admin_state, AdminTopicEditorState.set_label, "Handler Test")
    assert admin_state.f_slug == "" and admin_state.auto_slug == "handler-test"  # shown, not typed into the field
    admin_state.f_description = "Aangemaakt door de test."
    await call(admin_state, AdminTopicEditorState.save)
    demo = store.require_tenant("demo")
    assert store.topic(demo, "handler-test").label == "Handler Test" and admin_state.f_slug == "handler-test"
    await call(substate(root, AdminTopicListState), AdminTopicListState.delete_topic, "handler-test")
    assert store.topic(demo, "handler-test") is None


async def test_save_shows_field_errors_and_writes_nothing(store):
    root = await signed_in_root("admin@example.com")
    admin_state = substate(root, AdminTopicEditorState)
    await call(admin_state, AdminTopicEditorState.load_new)
    admin_state.f_slug, admin_state.f_label, admin_state.f_description = "Geen Slug", "", ""
    await call(admin_state, AdminTopicEditorState.save)
    assert set(admin_state.field_errors) == {"id", "label", "description"}
    assert store.topic(store.require_tenant("demo"), "Geen Slug") is None


async def test_learner_sees_only_own_tenant_topics(store):
    root = await signed_in_root("learner@acme.example")
    learn = substate(root, LearnState)
    await call(learn, LearnState.load_index)
    slugs = {card.slug for card in learn.visible}
    assert "pensioenregeling" in slugs and "magazijnveiligheid" in slugs
    assert "waardeoverdracht" not in slugs


async def test_wrong_password_is_a_readable_error(store):
    root = rx.State(_reflex_internal_init=True)
    auth = substate(root, AuthState)
    await call(auth, AuthState.sign_in, {"email": "learner@example.com", "password": "fout-wachtwoord"})
    assert auth.signin_error == "E-mailadres of wachtwoord klopt niet." and not auth.signed_in


async def test_learner_cannot_approve_suggestions_by_calling_the_handler(store, admin_pb):
    from r42_app.core.delta import GraphSnapshot, validate_delta
    from r42_app.services.store.suggestions import SuggestionStore
    from r42_app.state.suggestions import SuggestionsState

    demo = store.require_tenant("demo")
    kb = store.load(demo)
    proposal = validate_delta({"reason": "Test.", "topics": [{"id": "guard-test", "label": "Guard test",
                                                              "type": "concept", "description": "x"}],
                               "relations": []}, GraphSnapshot(kb.topics, kb.relations))
    learner = admin_pb.first("users", 'email = "learner@example.com"')
    suggestion = SuggestionStore(admin_pb, store).append_suggestion(demo, learner["id"], proposal)

    root = await signed_in_root("learner@example.com")
    queue = substate(root, SuggestionsState)
    emitted = await call(queue, SuggestionsState.approve, suggestion.id)
    assert "Alleen beheerders" in str(emitted)
    assert admin_pb.get("suggestions", suggestion.id)["status"] == "pending"
    assert store.topic(demo, "guard-test") is None

    admin_root = await signed_in_root("admin@example.com")
    admin_queue = substate(admin_root, SuggestionsState)
    await call(admin_queue, SuggestionsState.load)
    assert suggestion.id in [r.id for r in admin_queue.rows]
    await call(admin_queue, SuggestionsState.approve, suggestion.id)
    await call(admin_queue, SuggestionsState.approve, suggestion.id)  # a second click applies nothing
    assert admin_pb.get("suggestions", suggestion.id)["status"] == "approved"
    assert store.topic(demo, "guard-test") is not None
    store.delete_topic(demo, "guard-test")
