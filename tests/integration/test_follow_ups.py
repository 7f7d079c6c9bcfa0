"""Follow-up questions (issue 47) through the real turn: POST /api/chat against the real PocketBase, retrieval and
the anthropic SDK talking to the fake Messages API (and offline). A follow-up that means little alone is grounded
on the conversation (its sources, the prompt's KB context, the offline answer), a new question about another topic
on itself, and the question log keeps the words typed beside the question as understood."""

import json

import httpx
import pytest

from r42_app.api import api
from tests.integration.conftest import rebuild_services

pytestmark = pytest.mark.anyio

EARLIER = [{"role": "user", "content": "Hoe werkt waardeoverdracht?"},
           {"role": "assistant", "content": "Bij waardeoverdracht neem je je opgebouwde pensioen mee [ref:1]."}]
FOLLOW_UP = "Hoe lang duurt dat?"


async def chat(token, messages, mode="fts"):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        resp = await client.post("/api/chat", headers={"Authorization": f"Bearer {token}"},
                                 json={"messages": messages, "mode": mode})
    assert resp.status_code == 200, resp.text
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "done", events
    return events


def sources(events):
    return [s["slug"] for e in events if e["type"] == "sources" for s in e["sources"]]


@pytest.fixture
def learner(pb_server, seeded):
    return pb_server.user("learner@example.com")


async def test_offline_a_follow_up_is_grounded_on_the_earlier_topic(api_env, learner, monkeypatch):
    await rebuild_services()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    alone = await chat(learner.token, [{"role": "user", "content": FOLLOW_UP}])
    inside = await chat(learner.token, [*EARLIER, {"role": "user", "content": FOLLOW_UP}])
    assert not {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(sources(alone)[:3])  # alone: about anything
    assert {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(sources(inside)[:2])
    answer = "".join(e["text"] for e in inside if e["type"] == "text")
    assert "aardeoverdracht" in answer and inside[-1]["grounded"] is True  # the offline answer quotes that topic


async def test_a_follow_up_gives_the_model_the_earlier_topic_as_context(api_env, learner):
    api_env.reply_text("Een waardeoverdracht duurt meestal enkele maanden [ref:1].")
    events = await chat(learner.token, [*EARLIER, {"role": "user", "content": FOLLOW_UP}])
    system = json.dumps(api_env.requests[-1]["body"]["system"], ensure_ascii=False)
    context = system[system.index("KNOWLEDGE BASE CONTEXT"):]
    assert "- waardeoverdracht · Waardeoverdracht" in context
    assert {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(sources(events)[:2]), sources(events)
    # the model still gets the conversation itself, the question last, as typed
    assert api_env.requests[-1]["body"]["messages"][-1]["content"] == FOLLOW_UP


async def test_a_new_question_about_another_topic_is_grounded_on_itself(api_env, learner, monkeypatch):
    await rebuild_services()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    switch = "Wat is de dekkingsgraad van een pensioenfonds?"
    alone = await chat(learner.token, [{"role": "user", "content": switch}])
    inside = await chat(learner.token, [*EARLIER, {"role": "user", "content": switch}])
    assert sources(inside) == sources(alone) and sources(inside)[0] == "dekkingsgraad"
    assert not {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(sources(inside))


async def test_the_question_log_keeps_the_words_typed_and_the_question_as_understood(api_env, learner, admin_pb):
    from r42_app.container import services

    api_env.reply_text("Enkele maanden [ref:1].")
    follow = await chat(learner.token, [*EARLIER, {"role": "user", "content": FOLLOW_UP}])
    api_env.reply_text("De dekkingsgraad is de verhouding tussen vermogen en verplichtingen [ref:1].")
    switch = await chat(learner.token, [*EARLIER, {"role": "user", "content": "Wat is de dekkingsgraad?"}])
    await services().questions.flush()
    [row] = admin_pb.all("question_log", filter=f'turn_id = "{follow[-1]["turn_id"]}"')
    assert row["question"] == FOLLOW_UP
    assert row["understood"] == f"Hoe werkt waardeoverdracht? … {FOLLOW_UP}"
    assert {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(row["sources"][:2])
    [own] = admin_pb.all("question_log", filter=f'turn_id = "{switch[-1]["turn_id"]}"')
    assert own["question"] == "Wat is de dekkingsgraad?" and own["understood"] == ""  # it stands on its own


async def test_offline_a_follow_up_about_something_the_kb_does_not_know_is_not_grounded(api_env, learner,
                                                                                       monkeypatch):
    """It leans on the conversation ("En …"), but its own words are not the knowledge base's: R42 says it found
    nothing, instead of quoting the earlier topic, and the question log counts it as a miss for the gaps report."""
    from r42_app.container import services

    await rebuild_services()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    events = await chat(learner.token, [*EARLIER, {"role": "user", "content": "En hoe bak ik een appeltaart?"}])
    answer = "".join(e["text"] for e in events if e["type"] == "text")
    assert events[-1]["grounded"] is False and answer == "Daarover staat niets in de kennisbank van je organisatie."
    await services().questions.flush()
    [row] = services().admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')
    assert row["grounded"] is False and row["understood"].endswith("En hoe bak ik een appeltaart?")
