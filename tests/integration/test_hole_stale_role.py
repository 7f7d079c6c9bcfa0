"""Issue 10, hole 2: a demoted admin must lose admin powers in a tab that is already open, and a
revoked token (password reset) signs that tab out with a message. Driven through the real Reflex
State classes against the real PocketBase."""


import pytest

from r42_app.core.messages import msg
from r42_app.services.store.kb_store import KBStore
from r42_app.state.admin_topics import AdminTopicEditorState, AdminTopicListState
from r42_app.state.auth import AuthState
from r42_app.state.suggestions import SuggestionsState
from tests.conftest import throwaway_user
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio


@pytest.fixture
def temp_admin(admin_pb, seeded, app_env):
    """A throw-away admin of tenant demo (so the demo admin stays as it is for other tests)."""
    with throwaway_user(admin_pb, "admin", "Tijdelijke Beheerder", "temp-admin") as (email, row):
        yield email, row["id"]


async def _editor(root):
    editor = substate(root, AdminTopicEditorState)
    await call(editor, AdminTopicEditorState.load_new)
    editor.f_slug, editor.f_label, editor.f_type, editor.f_description = ("stale-role-topic", "Stale role topic",
                                                                           "concept", "Mag niet bestaan.")
    return editor


async def test_a_demoted_admin_cannot_write_from_an_open_tab(temp_admin, admin_pb):
    email, user_id = temp_admin
    root = await signed_in_root(email)
    editor = await _editor(root)
    assert not editor.forbidden
    admin_pb.update("users", user_id, {"role": "learner"})  # demoted while the tab is open

    emitted = await call(editor, AdminTopicEditorState.save)
    assert "Alleen beheerders" in str(emitted)
    kb = KBStore(admin_pb)
    assert kb.topic(kb.require_tenant("demo"), "stale-role-topic") is None

    auth = substate(root, AuthState)
    await call(auth, AuthState.check_session)  # what a reload runs
    assert auth.role == "learner" and not auth.is_admin
    topic_list = substate(root, AdminTopicListState)
    await call(topic_list, AdminTopicListState.load_list)
    assert topic_list.forbidden and topic_list.rows == []
    queue = substate(root, SuggestionsState)
    await call(queue, SuggestionsState.load)
    assert queue.forbidden and queue.rows == []


async def test_a_revoked_token_signs_the_tab_out_with_a_message(temp_admin, admin_pb):
    email, user_id = temp_admin
    root = await signed_in_root(email)
    editor = await _editor(root)
    admin_pb.update("users", user_id, {"password": "een-nieuw-wachtwoord", "passwordConfirm": "een-nieuw-wachtwoord"})

    emitted = await call(editor, AdminTopicEditorState.save)
    assert "Alleen beheerders" in str(emitted)
    auth = substate(root, AuthState)
    assert not auth.signed_in and auth.session_token == "" and auth.signin_error == msg("auth.session_ended")
    kb = KBStore(admin_pb)
    assert kb.topic(kb.require_tenant("demo"), "stale-role-topic") is None
