"""Follow-up questions (issue 47) through the real turn: POST /api/chat against the real PocketBase, retrieval and
the anthropic SDK talking to the fake Messages API (and offline). A follow-up that means little alone is grounded
on the conversation (its sources, the prompt's KB context, the offline answer), a new question about another topic
on itself, and the question log keeps the words typed beside the question as understood."""

import json

import httpx
import pytest

from r42_app.api import api
from r42_app.core.conversation import REWRITE_MAX_TOKENS
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


# -- the model's rewrite (R42_QUESTION_REWRITE=true; chat/rewrite.py) -------------------------------------------

PARTNER = [{"role": "user", "content": "Wat is partnerpensioen?"},
           {"role": "assistant", "content": "Partnerpensioen is een uitkering voor de partner na overlijden [ref:1]."}]
CHILDREN = "En voor de kinderen?"
REWRITTEN = "Welk pensioen krijgen de kinderen als een deelnemer overlijdt?"


@pytest.fixture
async def rewriting(api_env, monkeypatch):
    monkeypatch.setenv("R42_QUESTION_REWRITE", "true")
    monkeypatch.setenv("R42_QUESTION_REWRITE_MODEL", "claude-test-fast")
    await rebuild_services()
    return api_env


def rewrite_requests(fake):
    return [r["body"] for r in fake.requests if r["body"]["max_tokens"] <= REWRITE_MAX_TOKENS]


async def test_with_the_rewrite_on_a_follow_up_is_grounded_on_the_models_standalone_question(rewriting, learner,
                                                                                             admin_pb):
    from r42_app.container import services

    rewriting.reply_text(REWRITTEN, usage={"input_tokens": 180, "output_tokens": 14})
    rewriting.reply_text("Kinderen krijgen wezenpensioen [ref:1].")
    events = await chat(learner.token, [*PARTNER, {"role": "user", "content": CHILDREN}])
    [rewrite, answer] = [r["body"] for r in rewriting.requests]
    # the fast tier got the conversation (both sides) and the question as typed, and nothing else to do
    assert rewrite["model"] == "claude-test-fast" and "tools" not in rewrite
    prompt = rewrite["messages"][0]["content"]
    assert "Learner: Wat is partnerpensioen?" in prompt and "Assistant: Partnerpensioen is" in prompt
    assert prompt.index(CHILDREN) > prompt.index("</conversation>")
    # the turn's sources and the model's KB context are the rewrite's: wezenpensioen first
    assert sources(events)[0] == "wezenpensioen", sources(events)
    system = "\n".join(block["text"] for block in answer["system"])
    demo = services().retriever.tenant("demo")
    assert services().retriever.build_kb_context(demo, REWRITTEN).text in system  # the rewrite's KB context ...
    offline = services().retriever.ground(demo, ["Wat is partnerpensioen?", CHILDREN]).context.text
    assert offline != services().retriever.build_kb_context(demo, REWRITTEN).text  # ... not the offline one
    assert answer["model"] == "claude-test" and answer["messages"][-1]["content"] == CHILDREN  # as typed
    # the question log keeps the words typed and the rewrite; the rewrite is paid under its own capability
    await services().questions.flush()
    [row] = admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')
    assert (row["question"], row["understood"]) == (CHILDREN, REWRITTEN)
    await services().chat.costs.flush()
    costs = {e["source"]: e for e in admin_pb.all("ai_cost_events", filter=f'turn_id = "{events[-1]["turn_id"]}"')}
    assert set(costs) == {"chatbot:question_rewrite", "chatbot:chat_general"}
    paid = costs["chatbot:question_rewrite"]
    assert (paid["input_tokens"], paid["output_tokens"], paid["model"]) == (180, 14, "claude-test-fast")
    assert paid["credits"] > 0


async def test_with_the_rewrite_on_a_first_question_is_not_rewritten(rewriting, learner):
    rewriting.reply_text("Partnerpensioen is een uitkering [ref:1].")
    events = await chat(learner.token, PARTNER[:1])
    assert len(rewriting.requests) == 1 and not rewrite_requests(rewriting)
    assert sources(events)[0] == "partnerpensioen"


@pytest.mark.parametrize("trouble", ["server error", "slow", "an answer instead of a question", "a one-line answer",
                                     "cut off", "empty"])
async def test_when_the_rewrite_fails_the_turn_is_grounded_offline_as_without_it(rewriting, learner, trouble,
                                                                                monkeypatch, admin_pb):
    """Whatever the fast tier does, the learner gets the answer, grounded as the offline path grounds it."""
    from r42_app.container import services

    services().chat.rewriter.timeout_s = 0.5
    if trouble == "server error":
        rewriting.fail(500)  # not retried: the next script is the answer
    elif trouble == "slow":
        rewriting.reply_text(REWRITTEN, delay=1.5)
    elif trouble == "an answer instead of a question":
        rewriting.reply_text("Kinderen krijgen wezenpensioen.\n\nDat is een uitkering tot hun 18e of 27e.")
    elif trouble == "a one-line answer":
        rewriting.reply_text("Een waardeoverdracht duurt meestal drie tot zes maanden.")
    elif trouble == "cut off":
        rewriting.reply_text("Hoe lang duurt het voordat een waardeoverdracht van mijn", stop_reason="max_tokens")
    else:
        rewriting.reply_text(" ")
    rewriting.reply_text("Het antwoord [ref:1].")
    events = await chat(learner.token, [*EARLIER, {"role": "user", "content": FOLLOW_UP}])
    assert [e["type"] for e in events if e["type"] == "error"] == []
    assert "".join(e["text"] for e in events if e["type"] == "text") == "Het antwoord [ref:1]."
    assert {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(sources(events)[:2]), sources(events)
    await services().questions.flush()
    [row] = admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')
    assert row["understood"] == f"Hoe werkt waardeoverdracht? … {FOLLOW_UP}"  # the offline understanding


async def test_with_the_rewrite_on_a_refused_turn_sends_the_model_nothing(rewriting, learner, admin_pb):
    """Out of credit, in the window's path (`run_turn` without a permit: its guard runs inside the turn): the guard
    refuses before the rewrite, so not even the question reaches the model."""
    from r42_app.chat.turn import ChatRefused, run_turn
    from r42_app.container import services
    from r42_app.services.store.auth import AuthService

    tenant = admin_pb.first("tenants", 'slug = "demo"')
    admin_pb.update("tenants", tenant["id"], {"credits": 0, "credits_unlimited": False})
    try:
        signed_in = AuthService(services().settings.pb_url, services().admin_pb).verify(learner.token).user
        with pytest.raises(ChatRefused) as refused:
            async for _ in run_turn(signed_in, [*PARTNER, {"role": "user", "content": CHILDREN}], services().chat,
                                    "fts", token=learner.token):
                pass
        assert refused.value.kind == "quota_exceeded" and rewriting.requests == []
    finally:
        admin_pb.update("tenants", tenant["id"], {"credits": tenant["credits"],
                                                  "credits_unlimited": tenant.get("credits_unlimited", False)})


async def test_with_the_rewrite_on_a_topic_switch_stays_itself(rewriting, learner, admin_pb):
    """A complete new question: the model repeats it, the turn is grounded as the question alone, and the log
    has no "understood" beside it (the same words, whatever their spacing)."""
    from r42_app.container import services

    switch = "Wat is de dekkingsgraad van een pensioenfonds?"
    rewriting.reply_text("wat is de  dekkingsgraad van een pensioenfonds?")
    rewriting.reply_text("De dekkingsgraad [ref:1].")
    events = await chat(learner.token, [*EARLIER, {"role": "user", "content": switch}])
    assert sources(events)[0] == "dekkingsgraad"
    assert not {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & set(sources(events))
    await services().questions.flush()
    [row] = admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')
    assert (row["question"], row["understood"]) == (switch, "")


async def test_a_rewrite_that_times_out_mid_reply_is_still_paid(rewriting, learner, admin_pb):
    """The model started (and billed) its reply, then was too slow: the turn goes on without it, and what the call
    used so far is the turn's question_rewrite event."""
    from r42_app.container import services

    services().chat.rewriter.timeout_s = 0.5
    rewriting.reply_text(*"Hoe lang duurt een waardeoverdracht?".split(" "), chunk_delay=0.4,
                         usage={"input_tokens": 250, "output_tokens": 9})
    rewriting.reply_text("Enkele maanden [ref:1].")
    events = await chat(learner.token, [*EARLIER, {"role": "user", "content": FOLLOW_UP}])
    assert "".join(e["text"] for e in events if e["type"] == "text") == "Enkele maanden [ref:1]."
    await services().chat.costs.flush()
    costs = {e["source"]: e for e in admin_pb.all("ai_cost_events", filter=f'turn_id = "{events[-1]["turn_id"]}"')}
    assert costs["chatbot:question_rewrite"]["input_tokens"] == 250  # from the reply's start (message_start)
