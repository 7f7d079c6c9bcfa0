"""The model's text in ~30 ms chunks (issue 26): fewer events, none late, nothing lost or reordered."""

import asyncio

import pytest

from r42_app.chat.coalesce import coalesce_text
from r42_app.services.adapters.llm import LLMEvent

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def source(script, log=None, sent=None):
    """Yield each (delay, event) after its delay; note when the source is closed, and in `sent` each text piece
    the model sends, as it sends it."""
    try:
        for delay, event in script:
            await asyncio.sleep(delay)
            if sent is not None:
                sent.append(("model", event.text))
            yield event
    finally:
        if log is not None:
            log.append("closed")


def text(t):
    return LLMEvent("text", text=t)


async def collect(script, interval=0.03):
    return [e async for e in coalesce_text(source(script), interval)]


async def test_a_burst_of_pieces_becomes_the_first_piece_and_one_chunk_in_order():
    out = await collect([(0, text(f"w{i} ")) for i in range(18)] + [(0, LLMEvent("stop"))])
    assert [e.kind for e in out] == ["text", "text", "stop"]
    assert out[0].text == "w0 " and "".join(e.text for e in out[:2]) == "".join(f"w{i} " for i in range(18))


async def test_a_slow_model_still_gets_every_piece_out_within_the_interval():
    # pieces 50 ms apart with a 30 ms interval: each goes on its own, none held back for the next one. Told as the
    # order of what happened (the learner has each piece before the model sends the next), not as times.
    script = [(0.05, text(f"p{i}")) for i in range(4)]
    story = []
    async for e in coalesce_text(source(script, sent=story), 0.03):
        story.append(("learner", e.text))
    assert story == [(who, f"p{i}") for i in range(4) for who in ("model", "learner")]


async def test_a_piece_that_waits_goes_out_when_its_time_is_up_not_with_the_next_one():
    # p1 arrives 10 ms after p0 (buffered); the next piece comes 300 ms later: p1 must not wait for it. The event
    # loop runs its timers in the order they are due (p1's at ~30 ms, the model's next piece at ~310 ms), so this
    # order holds however busy the machine is.
    script = [(0, text("p0")), (0.01, text("p1")), (0.3, text("p2"))]
    story = []
    async for e in coalesce_text(source(script, sent=story), 0.03):
        story.append(("learner", e.text))
    assert story == [("model", "p0"), ("learner", "p0"), ("model", "p1"), ("learner", "p1"), ("model", "p2"),
                     ("learner", "p2")]


async def test_other_events_keep_their_place_after_the_text_before_them():
    tool = LLMEvent("tool_use", tool_id="t1", tool_name="search_kb")
    out = await collect([(0, text("a")), (0, text("b")), (0, tool), (0, text("c")), (0, LLMEvent("stop"))])
    assert [(e.kind, e.text) for e in out] == [("text", "a"), ("text", "b"), ("tool_use", ""), ("text", "c"),
                                               ("stop", "")]


async def test_closing_early_closes_the_models_stream():
    log = []
    gen = coalesce_text(source([(0, text("a")), (0.01, text("b")), (1.0, text("never"))], log), 0.03)
    first = await gen.__anext__()
    assert first.text == "a"
    await gen.__anext__()  # b, flushed while the source is being asked for the next piece
    await gen.aclose()  # the user pressed stop
    assert log == ["closed"]


async def test_an_error_of_the_model_reaches_the_turn():
    async def failing():
        yield text("a")
        yield text("b")
        raise RuntimeError("stream broke")

    got = []
    with pytest.raises(RuntimeError, match="stream broke"):
        async for e in coalesce_text(failing(), 0.03):
            got.append(e.text)
    assert "".join(got) == "ab"  # the text before the break is not lost with it
