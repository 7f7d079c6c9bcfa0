"""No blocking I/O on the event loop (issue 14): every page's handlers leave PocketBase (and any other blocking
call) to a worker thread, so one slow query cannot stall the other users of the process.

Structural, not timed (issue 45): tests/integration/loop_guard.py writes down every blocking call (PocketBase's
requests, a blocking socket, a synchronous HTTP request, time.sleep, the embedding model, the vector store) made on
the event loop's own thread while a handler runs, and there must be none. It once slowed PocketBase down by 500 ms
a request and bounded how late a ticker on the loop woke up: 45 s of waiting, and a bound that CPU noise on a busy
machine could cross. How long the loop is held under load is measured in bench/ (bench_load.py, bench_hostile.py:
the event-loop lag), not here."""

import asyncio

import pytest

from r42_app.services.store.pb import PocketBase
from r42_app.state.admin_topics import AdminTopicEditorState, AdminTopicListState
from r42_app.state.auth import AuthState
from r42_app.state.chat import ChatState
from r42_app.state.chatbot_settings import ChatbotSettingsState
from r42_app.state.costs import CostsState
from r42_app.state.feedback import FeedbackState
from r42_app.state.graph import GraphState
from r42_app.state.learn import LearnState
from r42_app.state.quiz import QuizState
from r42_app.state.suggestions import SuggestionsState
from r42_app.state.tools import ToolsState
from tests.integration.loop_guard import blocking_on_loop
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio


HANDLERS = [
    (GraphState, "load"), (GraphState, "poll"), (SuggestionsState, "load"), (SuggestionsState, "poll"),
    (LearnState, "load_index"), (AdminTopicListState, "load_list"), (ChatbotSettingsState, "load"),
    (CostsState, "load"), (ToolsState, "load"), (ChatState, "check_access"), (AuthState, "check_session"),
    (FeedbackState, "load"),
]


@pytest.mark.parametrize("cls,name", HANDLERS, ids=[f"{c.__name__}.{n}" for c, n in HANDLERS])
async def test_page_handlers_never_block_the_loop(app_env, seeded, cls, name):
    state = substate(await signed_in_root("admin@example.com"), cls)
    if cls is GraphState and name == "poll":
        await call(state, GraphState.load)
    handler = getattr(cls, name)
    assert await blocking_on_loop(lambda: call(state, handler)) == [], f"{cls.__name__}.{name} blocked the loop"


async def test_a_quiz_start_and_answer_never_block_the_loop(app_env, seeded, admin_pb):
    quiz = substate(await signed_in_root("learner@example.com"), QuizState)
    try:
        assert await blocking_on_loop(lambda: call(quiz, QuizState.start)) == []
        assert quiz.current is not None  # a quiz was started: the check saw the handler's real work
        await call(quiz, QuizState.choose, quiz.current.options[0])
        assert await blocking_on_loop(lambda: call(quiz, QuizState.next)) == []
    finally:
        user = admin_pb.first("users", 'email = "learner@example.com"')
        for row in admin_pb.all("quiz_sessions", filter=f'user = "{user["id"]}" && active = true'):
            admin_pb.update("quiz_sessions", row["id"], {"active": False})


async def test_an_admin_write_never_blocks_the_loop(app_env, seeded, admin_pb):
    editor = substate(await signed_in_root("admin@example.com"), AdminTopicEditorState)
    await call(editor, AdminTopicEditorState.load_new)
    editor.f_slug, editor.f_label, editor.f_type, editor.f_description = ("loop-test", "Loop test", "concept", "Test.")
    try:
        assert await blocking_on_loop(lambda: call(editor, AdminTopicEditorState.save)) == []
    finally:
        demo = admin_pb.first("tenants", 'slug = "demo"')
        row = admin_pb.first("topics", f'tenant = "{demo["id"]}" && slug = "loop-test"')
        if row:
            admin_pb.delete("topics", row["id"])


async def test_the_check_sees_a_blocking_call_on_the_loop_and_not_one_in_a_thread(pb_server):
    """The check above can fail: a PocketBase request made on the loop is written down (its client's request, its
    HTTP request, its socket), the same request from a worker thread is not, nor the loop's own non-blocking I/O."""
    pb = PocketBase(pb_server.url)

    async def on_the_loop():
        pb.health()

    async def in_a_thread():
        await asyncio.to_thread(pb.health)
        await asyncio.sleep(0)

    try:
        seen = await blocking_on_loop(on_the_loop)
        assert seen[:2] == ["PocketBase.send GET /api/health", "httpx.Client.send"]
        assert any(s.startswith("socket.") for s in seen)
        assert await blocking_on_loop(in_a_thread) == []
    finally:
        pb.close()
