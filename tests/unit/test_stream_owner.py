"""Issue 17: an answer whose backend worker died ends as incomplete when the tab asks (stream_check)."""

import subprocess
import sys
import time

from r42_app.core.chat_view import UIMessage
from r42_app.state import chat
from r42_app.state.chat import ChatState


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_owner_liveness():
    here = chat.owner_id()
    assert chat._owner_alive(here, 0.0)  # this process: alive, however long ago it wrote
    assert not chat._owner_alive(f"{chat.OWNER_HOST}:{dead_pid()}", time.time())  # died: gone at once
    assert chat._owner_alive("", 0.0)  # not known: never cut on a guess
    assert chat._owner_alive("other-machine:12", time.time() - 5)  # elsewhere: gone only when silent
    assert not chat._owner_alive("other-machine:12", time.time() - chat.STALE_STREAM_S - 1)


def streaming_state(owner: str) -> ChatState:
    state = ChatState(_reflex_internal_init=True)
    state.messages = [UIMessage("q1", "user", "Wat is de AOW?"),
                      UIMessage("a1", "assistant", "De AOW is het basispensioen", "streaming")]
    state.streaming, state.mark = True, "typing"
    state._stream_owner, state._stream_beat, state._stream_run = owner, time.time(), "run-1"
    return state


def test_an_answer_of_a_dead_worker_ends_incomplete_with_retry():
    state = streaming_state(f"{chat.OWNER_HOST}:{dead_pid()}")
    state.stream_check()
    assert not state.streaming and state.messages[-1].status == "incomplete"
    assert state.messages[-1].content == "De AOW is het basispensioen"  # what came is kept
    assert state.can_retry and "onderbroken" in state.error
    assert state._stream_run == ""  # the worker's generate, should it still run somewhere, writes no more


def test_an_answer_this_worker_streams_is_left_alone():
    state = streaming_state(chat.owner_id())
    state.stream_check()
    assert state.streaming and state.messages[-1].status == "streaming"
