"""The supervisor `r42 serve` keeps around PocketBase (and Redis, Chroma): a child that exits is started again at
the first check a second later, each further failure within a minute waits twice as long (up to 30 s), after five
it gives up and says where to look, and a child that ran a minute has its earlier trouble forgotten.

On a clock the test moves (issue 45): the browser test tests/e2e/test_pocketbase_recovery.py kills the served
app's PocketBase and sees chat work again, and no longer times how long that took; this is the schedule that
decides it."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from r42_app.services.runtime import supervisor
from r42_app.services.runtime.supervisor import Supervisor


class Proc:
    """A child process, as the supervisor sees one."""

    def __init__(self):
        self.returncode = None

    def poll(self):
        return self.returncode


class Server:
    log_file = Path("/data/pocketbase.log")

    def __init__(self):
        self.proc, self.starts, self.refuse = Proc(), 0, False

    def start(self):
        if self.refuse:
            raise RuntimeError("port 8090 is in use")
        self.starts += 1
        self.proc = Proc()
        return self

    def die(self, code=-9):
        self.proc.returncode = code


@pytest.fixture
def clock(monkeypatch):
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(supervisor, "time", SimpleNamespace(monotonic=lambda: clock.now))
    return clock


def test_a_killed_child_is_started_again_at_the_first_check_a_second_later(clock):
    server, lines = Server(), []
    watch = Supervisor(server, lines.append)
    assert watch.check() and server.starts == 0 and lines == []  # running: left alone
    server.die()
    assert watch.check() and server.starts == 0
    assert lines == ["PocketBase stopped (exit status -9); restarting in 1 s (see /data/pocketbase.log)"]
    clock.now += 0.5
    assert watch.check() and server.starts == 0  # not yet
    clock.now += 0.5
    assert watch.check() and server.starts == 1 and lines[-1] == "PocketBase is running again"
    clock.now += 0.5
    assert watch.check() and server.starts == 1  # running again: left alone


def test_a_child_that_keeps_dying_waits_longer_each_time_and_is_given_up_after_five(clock):
    server, lines = Server(), []
    watch = Supervisor(server, lines.append)
    waits = []
    for _ in range(4):
        server.die()
        assert watch.check()
        waits.append(lines[-1].split("restarting in ")[1].split(" s")[0])
        clock.now += 0.99 * int(waits[-1])
        starts = server.starts
        assert watch.check() and server.starts == starts  # a moment before its time: not yet
        clock.now += 0.01 * int(waits[-1])
        assert watch.check() and server.starts == starts + 1
    assert waits == ["1", "2", "4", "8"]
    server.die()
    assert watch.check() is False  # the fifth within a minute: `r42 serve` stops, saying where to look
    assert lines[-1] == ("PocketBase stopped 5 times within a minute; giving up. See /data/pocketbase.log, "
                         "then start R42 again.")


def test_a_child_that_ran_a_minute_is_restarted_after_a_second_again(clock):
    server, lines = Server(), []
    watch = Supervisor(server, lines.append)
    for _ in range(3):
        server.die()
        watch.check()
        clock.now += 10
        watch.check()
    assert "restarting in 4 s" in lines[-2]
    clock.now += 61
    assert watch.check()  # a minute without trouble
    server.die()
    watch.check()
    assert "restarting in 1 s" in lines[-1]


def test_a_child_that_will_not_start_is_tried_again_and_then_given_up(clock):
    server, lines = Server(), []
    watch = Supervisor(server, lines.append, name="Chroma")
    server.refuse = True
    server.die()
    checks = [watch.check()]
    while checks[-1] and len(checks) < 60:  # checked every second for a minute (`r42 serve` does twice a second)
        clock.now += 1
        checks.append(watch.check())
    assert server.starts == 0 and checks[-1] is False
    assert lines[1:-1] == [f"Chroma did not start: port 8090 is in use; trying again in {s} s" for s in (2, 4, 8, 16)]
    assert lines[-1] == "giving up on Chroma; start R42 again once the problem above is fixed"
