"""The chat turn's own logic, with a scripted model in this process and the demo KB in memory (no PocketBase,
Chroma or embedding model). tests/integration/test_chat_turn.py runs the same turn through the real SDK."""

import asyncio
import dataclasses
import threading
import time

import pytest

from r42_app.chat.turn import ChatDeps, run_turn
from r42_app.core.chat import MAX_TOOL_ROUNDS, MAX_TURNS, ChatInputError
from r42_app.core.messages import msg
from tests.fakes.llm import USAGE, FakeLLM
from tests.fakes.memory_kb import LEARNER, MemoryKB, memory_retriever

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def kb():
    return MemoryKB()


@pytest.fixture(scope="module")
def retriever(kb):
    return memory_retriever(kb)


@pytest.fixture
def llm():
    return FakeLLM()


@pytest.fixture
def deps(kb, retriever, llm):
    return ChatDeps(retriever=retriever, kb=kb, llm=llm)


async def collect(gen):
    """The turn's events as the HTTP API sends them (event.to_json())."""
    return [event.to_json() async for event in gen]


def ask(text):
    return [{"role": "user", "content": text}]


def texts(events):
    return "".join(e["text"] for e in events if e["type"] == "text")


async def test_the_answer_streams_after_the_sources_its_first_piece_at_once_then_in_chunks(deps, llm):
    llm.reply_text("Bij waardeoverdracht ", "neem je je pensioen mee ", "[ref:1].")
    events = await collect(run_turn(LEARNER, ask("Wat is waardeoverdracht?"), deps))
    assert events[0]["type"] == "sources" and events[0]["sources"][0]["slug"] == "waardeoverdracht"
    # the fake model sends its pieces at once: the rest comes as one chunk (chat/coalesce.py, ~30 ms)
    assert [e["text"] for e in events if e["type"] == "text"] == ["Bij waardeoverdracht ",
                                                                  "neem je je pensioen mee [ref:1]."]
    done = events[-1]
    assert done["type"] == "done" and done["offline"] is False and done["usage"] == USAGE
    assert done["mode_used"] == "fts"  # no embedding model here: the lexical search answers


async def test_only_the_last_twelve_turns_are_sent_and_the_dropped_ones_are_counted(deps, llm):
    history = []
    for i in range(15):
        history += [{"role": "user", "content": f"vraag {i}"}, {"role": "assistant", "content": f"antwoord {i}"}]
    llm.reply_text("Klaar.")
    events = await collect(run_turn(LEARNER, history + ask("Wat is de AOW?"), deps))
    sent = llm.requests[0]["messages"]
    assert len(sent) == 2 * MAX_TURNS - 1 and sent[0] == {"role": "user", "content": "vraag 4"}
    assert sent[-1] == {"role": "user", "content": "Wat is de AOW?"}
    assert events[-1]["dropped"] == 8


async def test_a_short_conversation_is_sent_whole(deps, llm):
    history = [{"role": "user", "content": "vraag"}, {"role": "assistant", "content": "antwoord"}]
    llm.reply_text("Klaar.")
    events = await collect(run_turn(LEARNER, history + ask("En de AOW?"), deps))
    assert [m["content"] for m in llm.requests[0]["messages"]] == ["vraag", "antwoord", "En de AOW?"]
    assert events[-1]["dropped"] == 0


async def test_a_tool_call_is_answered_with_its_result_in_the_next_round(deps, llm):
    llm.reply_tool("lookup_topic", {"id": "partnerpensioen"}, text="Even opzoeken.")
    llm.reply_text("Het partnerpensioen is voor de partner [ref:1].")
    events = await collect(run_turn(LEARNER, ask("Wat krijgt mijn partner?"), deps))
    assert {"type": "tool", "name": "lookup_topic", "input": {"id": "partnerpensioen"}} in events
    assistant, results = llm.requests[1]["messages"][-2:]
    assert assistant == {"role": "assistant", "content": [
        {"type": "text", "text": "Even opzoeken."},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup_topic", "input": {"id": "partnerpensioen"}}]}
    (result,) = results["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1" and "is_error" not in result
    assert "label: Partnerpensioen" in result["content"]
    assert texts(events) == "Even opzoeken.Het partnerpensioen is voor de partner [ref:1]."


async def test_several_tool_calls_in_one_round_each_get_a_result(deps, llm):
    llm.reply_tools([("lookup_topic", {"id": "aow"}), ("lookup_topic", {"id": "franchise"})])
    llm.reply_text("Beide gevonden.")
    await collect(run_turn(LEARNER, ask("AOW en franchise?"), deps))
    results = llm.requests[1]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_0", "toolu_1"]
    assert "label: AOW" in results[0]["content"] and "label: Franchise" in results[1]["content"]


async def test_the_tool_loop_stops_after_four_rounds_and_the_last_round_must_answer(deps, llm):
    for i in range(MAX_TOOL_ROUNDS + 2):
        llm.reply_tool("lookup_topic", {"id": "aow"}, tool_id=f"toolu_{i}")
    events = await collect(run_turn(LEARNER, ask("AOW?"), deps))
    assert len(llm.requests) == MAX_TOOL_ROUNDS + 1
    assert all(r["tools"] for r in llm.requests[:MAX_TOOL_ROUNDS]) and llm.requests[-1]["tools"] == []
    assert len([e for e in events if e["type"] == "tool"]) == MAX_TOOL_ROUNDS and events[-1]["type"] == "done"
    assert events[-1]["usage"]["input_tokens"] == (MAX_TOOL_ROUNDS + 1) * USAGE["input_tokens"]  # every round counts


async def test_a_tool_that_was_not_offered_is_refused_and_the_model_is_told(deps, llm):
    llm.reply_tool("delete_everything", {"really": True})
    llm.reply_text("Dat kan ik niet.")
    events = await collect(run_turn(LEARNER, ask("Wis alles"), deps))
    assert not [e for e in events if e["type"] == "tool"]  # nothing shown as used
    (result,) = llm.requests[1]["messages"][-1]["content"]
    assert result["is_error"] is True and "not available" in result["content"]


async def test_kb_search_snippets_continue_the_ref_numbers_and_can_be_cited(deps, llm):
    llm.reply_tool("kb_search", {"query": "dekkingsgraad", "mode": "fts"})
    llm.reply_text("Zie [ref:6].")
    events = await collect(run_turn(LEARNER, ask("Hoe gaat het met het fonds?"), deps))
    first_refs = [s["ref"] for s in events[0]["sources"]]
    result = llm.requests[1]["messages"][-1]["content"][0]["content"]
    assert first_refs == [1, 2, 3, 4, 5] and "[ref:6] topic=dekkingsgraad" in result
    assert [(e["ref"], e["slug"]) for e in events if e["type"] == "citation"] == [(6, "dekkingsgraad")]


async def test_a_ref_cited_twice_is_one_citation_and_unknown_refs_are_reported_stale(deps, llm):
    llm.reply_text("Eerst [ref:1], dan [ref:1] en [ref:9].")
    events = await collect(run_turn(LEARNER, ask("Wat is de dekkingsgraad?"), deps))
    (cite,) = [e for e in events if e["type"] == "citation"]
    (source,) = [s for s in events[0]["sources"] if s["ref"] == 1]
    assert (cite["ref"], cite["slug"], cite["url"]) == (1, source["slug"], source["url"])
    assert cite["url"] == f"/topics/{cite['slug']}#{cite['passage']}"
    assert events[-1]["stale_refs"] == [9]


async def test_an_error_mid_stream_keeps_the_text_so_far_and_ends_the_turn(kb, retriever, llm):
    costs = FakeCosts()
    deps = ChatDeps(retriever=retriever, kb=kb, llm=llm, costs=costs)
    llm.fail("server", after=("Eerste woorden ", "en dan"))
    events = await collect(run_turn(LEARNER, ask("Wat is de AOW?"), deps))
    assert [e["type"] for e in events] == ["sources", "text", "text", "error"]
    assert texts(events) == "Eerste woorden en dan"
    assert events[-1]["kind"] == "server" and events[-1]["retryable"] is True and events[-1]["message"]
    (rounds,) = [call[-1] for call in costs.recorded]  # what the failed round had cost is recorded
    assert rounds[0].usage.input_tokens == USAGE["input_tokens"]


@pytest.mark.parametrize("kind, retryable", [("auth", False), ("rate_limit", True), ("timeout", True)])
async def test_a_failed_model_call_is_one_typed_error_event(deps, llm, kind, retryable):
    llm.fail(kind, retryable=retryable)
    events = await collect(run_turn(LEARNER, ask("Wat is de AOW?"), deps))
    # the user reads the catalogue's Dutch for the kind, never the exception's own text
    assert events[-1] == {"type": "error", "kind": kind, "message": msg(f"llm.{kind}"), "retryable": retryable}
    assert not [e for e in events if e["type"] in ("text", "done")]


async def test_offline_the_knowledge_base_answers_with_citations(kb, retriever):
    deps = ChatDeps(retriever=retriever, kb=kb, llm=None)
    events = await collect(run_turn(LEARNER, ask("Wat is de dekkingsgraad?"), deps))
    assert events[0]["type"] == "sources" and "[ref:" in texts(events)
    cited = [e for e in events if e["type"] == "citation"]
    assert cited and cited[0]["slug"] in {s["slug"] for s in events[0]["sources"]}
    assert events[-1]["offline"] is True and events[-1]["usage"] == {}


@pytest.mark.parametrize("messages, message", [
    ([], "non-empty list"),
    (ask("   "), "non-empty question"),
    (ask("x" * 8001), "maximum is 8000"),
    ([{"role": "user", "content": "x"}] * 51, "at most 50"),
    ([{"role": "system", "content": "x"}], "role must be user or assistant"),
])
async def test_bad_input_is_refused_before_the_model_is_asked(deps, llm, messages, message):
    with pytest.raises(ChatInputError, match=message):
        await collect(run_turn(LEARNER, messages, deps))
    assert llm.requests == []


async def test_an_unknown_search_mode_is_refused(deps, llm):
    with pytest.raises(ChatInputError, match="mode must be one of"):
        await collect(run_turn(LEARNER, ask("Wat is de AOW?"), deps, mode="telepathy"))
    assert llm.requests == []


async def test_a_valid_graph_delta_becomes_an_event_and_the_model_is_told_it_is_not_applied(deps, llm):
    proposal = {"reason": "Het wezenpensioen ontbreekt.",
                "topics": [{"id": "wezenpensioen-nieuw", "label": "Wezenpensioen nieuw", "type": "concept",
                            "description": "Uitkering aan kinderen."}],
                "relations": [{"source": "wezenpensioen-nieuw", "target": "nabestaandenpensioen", "type": "part_of"}]}
    llm.reply_tool("propose_graph_delta", proposal)
    llm.reply_text("Ik heb een aanvulling voorgesteld.")
    events = await collect(run_turn(LEARNER, ask("Bestaat er een wezenpensioen?"), deps))
    (delta,) = [e for e in events if e["type"] == "delta"]
    assert delta["delta"]["topics"][0]["id"] == "wezenpensioen-nieuw"
    assert events.index(delta) > events.index({"type": "tool", "name": "propose_graph_delta", "input": proposal})
    result = llm.requests[1]["messages"][-1]["content"][0]["content"]
    assert "shown to the user" in result and "Do not claim it has been applied" in result


async def test_an_invalid_graph_delta_shows_no_chip_and_says_why(deps, llm):
    llm.reply_tool("propose_graph_delta", {"reason": "Cirkel.", "topics": [], "relations": [
        {"source": "pensioenregeling", "target": "partnerpensioen", "type": "part_of"}]})
    llm.reply_text("Dat ging niet.")
    events = await collect(run_turn(LEARNER, ask("Voeg iets toe"), deps))
    assert not [e for e in events if e["type"] == "delta"]
    (rejected,) = [e for e in events if e["type"] == "delta_rejected"]
    assert rejected["message"] == msg("delta.unusable")  # Dutch for the user, nothing of the English reason ...
    told = llm.requests[1]["messages"][-1]["content"][0]["content"]
    assert "rejected" in told and "cycle" in told  # ... which the model gets, to explain or try again


async def test_a_delta_to_an_unknown_topic_is_rejected(deps, llm):
    llm.reply_tool("propose_graph_delta", {"reason": "Koppeling.", "topics": [], "relations": [
        {"source": "aow", "target": "bestaat-niet", "type": "related_to"}]})
    llm.reply_text("Dat ging niet.")
    events = await collect(run_turn(LEARNER, ask("Koppel de AOW"), deps))
    assert [e["type"] for e in events].count("delta_rejected") == 1 and "delta" not in [e["type"] for e in events]


async def test_with_snippets_switched_off_the_prompt_has_no_snippets_and_nothing_is_cited(kb, retriever, llm):
    deps = ChatDeps(retriever=retriever, kb=kb, llm=llm, rag_snippets=False)
    llm.reply_text("Bij waardeoverdracht neem je je pensioen mee [ref:1].")
    events = await collect(run_turn(LEARNER, ask("Wat is waardeoverdracht?"), deps))
    assert "SNIPPET" not in str(llm.requests[0]["system"]) and "KNOWLEDGE BASE CONTEXT" in str(llm.requests[0]["system"])
    assert not [e for e in events if e["type"] in ("sources", "citation")]
    assert events[-1]["stale_refs"] == [1] and events[-1]["rag_snippets"] is False


class FakeCosts:
    """The cost recorder's interface (chat/turn.py CostSink), remembering what the turn recorded."""

    def __init__(self):
        self.recorded: list[tuple] = []

    def publish(self, *args) -> None:
        self.recorded.append(args)

    def record(self, *args) -> None:
        self.recorded.append(args)



class SlowSearch:
    """The retriever, with a search that takes 0.1 s and counts how many run at the same time."""

    def __init__(self, retriever):
        self.retriever = retriever
        self.running = self.most = 0
        self.lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self.retriever, name)

    def ground(self, *args, **kwargs):  # a turn's grounding: the question understood, the KB context, the search
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.1)
        with self.lock:
            self.running -= 1
        return self.retriever.ground(*args, **kwargs)


@pytest.mark.parametrize("users, most", [((LEARNER, LEARNER, LEARNER), 1),
                                         ((LEARNER, dataclasses.replace(LEARNER, id="u-other")), 2)])
async def test_one_users_turns_are_grounded_one_at_a_time_other_users_side_by_side(kb, retriever, users, most):
    """A user who sends several questions at once (a flood's first requests, within the burst) is answered in
    turn and cannot take every core from the others' chats: all of their questions are still answered."""
    search = SlowSearch(retriever)
    llm = FakeLLM()
    for _ in users:
        llm.reply_text("Antwoord [ref:1].")
    deps = ChatDeps(retriever=search, kb=kb, llm=llm)
    answers = await asyncio.gather(*(collect(run_turn(u, ask("Wat is waardeoverdracht?"), deps)) for u in users))
    assert search.most == most
    assert all(a[-1]["type"] == "done" and "Antwoord" in texts(a) for a in answers)


async def test_a_turn_stuck_with_a_users_lock_holds_the_next_one_up_only_so_long(monkeypatch):
    from r42_app.chat import turn

    monkeypatch.setattr(turn, "HOLD_WAIT_S", 0.2)
    stuck, release, story = asyncio.Event(), asyncio.Event(), []

    async def hang():
        async with turn._GROUNDING.hold("u-stuck"):
            stuck.set()
            await release.wait()  # a hung search: it lets go only when the test says so, long after the wait
            story.append("the stuck one lets go")

    hanging = asyncio.ensure_future(hang())
    await stuck.wait()
    # Told as the order of what happened, not as times: the event loop runs its timers in the order they are due,
    # and the next turn's wait (HOLD_WAIT_S from now) is due after the first mark and long before the release.
    loop = asyncio.get_running_loop()
    marks = [loop.call_later(turn.HOLD_WAIT_S / 2, story.append, "half the wait"),
             loop.call_later(turn.HOLD_WAIT_S * 25, release.set)]
    async with turn._GROUNDING.hold("u-stuck"):  # goes on after the wait, beside the stuck one
        story.append("the next turn goes on")
    release.set()
    await hanging
    for mark in marks:
        mark.cancel()
    assert story == ["half the wait", "the next turn goes on", "the stuck one lets go"]  # held up, not for good
    assert all(key != "u-stuck" for _loop, key in turn._GROUNDING._held)  # forgotten once nobody holds it
