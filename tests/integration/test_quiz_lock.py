"""The quiz lock on the server: `quiz_sessions` rows in a real PocketBase, the guard refusing chat
turns (before any model call), `POST /api/chat` answering 423 and `POST /api/quiz/end`."""

import json
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from r42_app.api import api
from r42_app.chat.turn import ChatDeps, ChatRefused, run_turn
from r42_app.services.store.access import AccessStore
from r42_app.services.store.auth import AuthService
from r42_app.services.store.quiz_store import QuizStore
from tests.conftest import DEMO_PASSWORD


@pytest.fixture
def learner(pb_server, seeded):
    return AuthService(pb_server.url, pb_server.admin_client()).sign_in("learner@example.com", DEMO_PASSWORD).user


@pytest.fixture
def quizzes(admin_pb, learner):
    store = QuizStore(admin_pb)
    store.end(learner.id)
    yield store
    store.end(learner.id)


def test_start_locks_end_unlocks_and_one_session_at_a_time(quizzes, learner, admin_pb):
    assert not quizzes.active(learner.id)
    quizzes.start(learner.tenant, learner.id)
    quizzes.start(learner.tenant, learner.id)  # a second start (another tab) replaces the first
    assert quizzes.active(learner.id)
    rows = admin_pb.all("quiz_sessions", filter=f'user = "{learner.id}" && active = true')
    assert len(rows) == 1 and rows[0]["tenant"] == learner.tenant_id
    assert quizzes.end(learner.id) == 1
    assert not quizzes.active(learner.id)
    ended = admin_pb.all("quiz_sessions", filter=f'user = "{learner.id}"', sort="-created")[0]
    assert ended["active"] is False and ended["ended"]


def test_a_session_expires_after_its_maximum_duration(admin_pb, learner):
    started = datetime.now(timezone.utc) - timedelta(minutes=31)
    old = QuizStore(admin_pb, clock=lambda: started)
    old.start(learner.tenant, learner.id)  # started 31 minutes ago, 30-minute limit
    assert old.active(learner.id)  # as seen at its start
    assert not QuizStore(admin_pb).active(learner.id)  # as seen now: expired, chat is free
    QuizStore(admin_pb).end(learner.id)


def test_sessions_are_per_user(quizzes, learner, pb_server, seeded):
    other = AuthService(pb_server.url, pb_server.admin_client()).sign_in("admin@example.com", DEMO_PASSWORD).user
    quizzes.start(learner.tenant, learner.id)
    assert quizzes.active(learner.id) and not quizzes.active(other.id)


def test_a_learner_cannot_end_or_forge_a_session_through_pocketbase(quizzes, learner, pb_server):
    quizzes.start(learner.tenant, learner.id)
    own = pb_server.user("learner@example.com")
    rows = own.all("quiz_sessions", filter="active = true")  # may read its own
    assert len(rows) == 1
    from r42_app.services.store.pb import PBError

    with pytest.raises(PBError):
        own.update("quiz_sessions", rows[0]["id"], {"active": False})
    with pytest.raises(PBError):
        own.delete("quiz_sessions", rows[0]["id"])
    assert quizzes.active(learner.id)


@pytest.mark.anyio
async def test_the_turn_is_refused_during_a_quiz_without_calling_the_model(quizzes, learner, indexed, claude):
    from r42_app.services.adapters.llm import AnthropicLLM

    kb, _, _, retriever = indexed
    llm = AnthropicLLM("test-key", "claude-test", base_url=claude.url, max_retries=0)
    turn_deps = ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=AccessStore(kb.pb, clock=quizzes.clock))
    quizzes.start(learner.tenant, learner.id)
    with pytest.raises(ChatRefused) as refused:
        async for _ in run_turn(learner, [{"role": "user", "content": "Wat is AOW?"}], turn_deps):
            pass
    assert refused.value.kind == "quiz_active" and "toets" in refused.value.user_message
    assert claude.requests == []
    quizzes.end(learner.id)  # and once the quiz is over, the same turn is answered
    claude.reply_text("De AOW is het basispensioen.")
    events = [e.to_json() async for e in run_turn(learner, [{"role": "user", "content": "Wat is AOW?"}], turn_deps)]
    assert "".join(e["text"] for e in events if e["type"] == "text") == "De AOW is het basispensioen."
    await llm.aclose()


async def call(path, token="", body=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        return await client.post(path, json=body, headers=headers)


@pytest.mark.anyio
async def test_api_answers_423_during_a_quiz_and_200_after(api_env, quizzes, learner, pb_server):
    token = pb_server.user("learner@example.com").token
    body = {"messages": [{"role": "user", "content": "Wat is de dekkingsgraad?"}], "mode": "fts"}
    quizzes.start(learner.tenant, learner.id)
    locked = await call("/api/chat", token, body)
    assert locked.status_code == 423
    assert locked.json()["type"] == "quiz_active" and "toets" in locked.json()["message"]
    assert api_env.requests == []
    # the tab closes: navigator.sendBeacon posts the token in the body
    ended = await call("/api/quiz/end", body={"token": token})
    assert ended.status_code == 200 and ended.json() == {"ended": 1}
    api_env.reply_text("De dekkingsgraad [ref:1].")
    free = await call("/api/chat", token, body)
    assert free.status_code == 200
    events = [json.loads(line[6:]) for line in free.text.splitlines() if line.startswith("data: ")]
    assert "".join(e["text"] for e in events if e["type"] == "text").startswith("De dekkingsgraad")


@pytest.mark.anyio
async def test_quiz_end_needs_a_valid_token(api_env, quizzes, learner):
    quizzes.start(learner.tenant, learner.id)
    for kwargs in ({}, {"body": {"token": "forged"}}, {"token": "forged"}, {"body": ["x"]}):
        resp = await call("/api/quiz/end", **kwargs)
        assert resp.status_code == 401
    assert quizzes.active(learner.id)
