"""Issue 17: an answer whose backend worker died ends as incomplete when the tab asks (stream_check).
Issue 23: whether a worker, and the answer it streams, is alive is one check (services/runtime/liveness.py)
over the workers' shared state."""

import subprocess
import sys
import time

import pytest

from r42_app import container
from r42_app.core.chat_view import UIMessage
from r42_app.services.runtime import liveness
from r42_app.services.runtime.liveness import HOST, Liveness, this_worker
from r42_app.services.runtime.shared_state import Beat, MemorySharedState
from r42_app.settings import Settings
from r42_app.state.chat import ChatState

pytestmark = pytest.mark.anyio


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
async def services(monkeypatch):
    """A container of this test's own: one worker, its shared state in memory. The state reads no session here (a
    bare ChatState has no app around it): the signed-in reader, for the language, is nobody."""
    from r42_app.state.chat import ChatState

    async def nobody(self, fresh: bool = False):
        return None

    monkeypatch.setattr(ChatState, "_user", nobody)
    with container.using(container.Services(Settings(redis_url=""))) as built:
        yield built
        await built.aclose()


async def test_a_worker_is_alive_while_its_process_runs_or_while_it_beats():
    shared = MemorySharedState()
    live = Liveness(shared)
    assert await live.worker_alive(this_worker())  # this process
    assert not await live.worker_alive(f"{HOST}:{dead_pid()}")  # died on this host: gone at once, no beat needed
    await shared.beat("elsewhere:12", Beat("elsewhere", 12, time.time() - 1), liveness.BEAT_TTL_S)
    assert await live.worker_alive("elsewhere:12")  # another machine: alive while it beats
    await shared.beat("elsewhere:12", Beat("elsewhere", 12, time.time() - liveness.GONE_AFTER_S - 1),
                      liveness.BEAT_TTL_S)
    assert not await live.worker_alive("elsewhere:12")  # three beats missed: gone
    assert not await live.worker_alive("never-beat:7")


async def test_a_late_beat_is_not_gone_yet_and_a_watched_silent_worker_is():
    shared = MemorySharedState()
    live = Liveness(shared)
    await shared.beat("slow:3", Beat("slow", 3, time.time() - liveness.FRESH_S - 1), liveness.BEAT_TTL_S)
    assert await live.worker_alive("slow:3")  # late but within three beats: not gone (yet)
    assert not await live.worker_alive("quiet:4", patience=0.6)  # watched a while: no beat came


async def test_an_answer_lives_while_its_worker_does_and_ends_with_it():
    shared = MemorySharedState()
    live = Liveness(shared)
    await live.claim_stream("run-1")
    assert await live.stream_alive("run-1")
    await shared.claim("stream", "run-2", f"{HOST}:{dead_pid()}", liveness.STALE_STREAM_S)
    assert not await live.stream_alive("run-2")
    assert not await live.stream_alive("never-claimed")
    await live.end_stream("run-1")
    assert not await live.stream_alive("run-1")
    live.stop()


async def streaming_state(run: str) -> ChatState:
    state = ChatState(_reflex_internal_init=True)
    state.messages = [UIMessage("q1", "user", "Wat is de AOW?"),
                      UIMessage("a1", "assistant", "De AOW is het basispensioen", "streaming")]
    state.streaming, state.mark = True, "typing"
    state._stream_run = run
    return state


async def test_an_answer_of_a_dead_worker_ends_incomplete_with_retry(services):
    await services.shared.claim("stream", "run-1", f"{HOST}:{dead_pid()}", liveness.STALE_STREAM_S)
    state = await streaming_state("run-1")
    await state.stream_check()
    assert not state.streaming and state.messages[-1].status == "incomplete"
    assert state.messages[-1].content == "De AOW is het basispensioen"  # what came is kept
    assert state.can_retry and "onderbroken" in state.error
    assert state._stream_run == ""  # the worker's generate, should it still run somewhere, writes no more


async def test_an_answer_this_worker_streams_is_left_alone(services):
    await services.liveness.claim_stream("run-2")
    state = await streaming_state("run-2")
    await state.stream_check()
    assert state.streaming and state.messages[-1].status == "streaming"
