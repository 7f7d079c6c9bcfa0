"""`r42 serve --web-only` and `--data-only` (issue 50): a machine that cannot take its part says why, in one line,
and starts nothing. (Both parts running together, behind a load balancer: tests/e2e/test_cluster.py.)"""

import signal

import psutil
import pytest

from r42_app.cli import main
from tests.conftest import free_port

ROLE_SETTINGS = ("R42_PB_URL", "REFLEX_REDIS_URL", "R42_REDIS_URL", "CHROMA_URL", "R42_CHROMA_TOKEN", "R42_BIND",
                 "R42_PUBLIC_URL", "R42_REPLICA_URL")


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """An empty data dir and no role settings; the signal handlers `serve` installs are put back after."""
    for name in ROLE_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("R42_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("R42_PORT", str(free_port()))
    monkeypatch.setenv("R42_PB_PORT", str(free_port()))
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield monkeypatch
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    started = [p.name() for p in psutil.Process().children(recursive=True) if p.pid not in children_before]
    assert started == [], f"a refused start left processes: {started}"


@pytest.mark.parametrize(("settings", "says"), [
    ({}, "--web-only uses the PocketBase of the data machine: set R42_PB_URL"),
    ({"R42_PB_URL": "http://127.0.0.2:8090"}, "share their sessions through Redis: set REFLEX_REDIS_URL"),
    ({"R42_PB_URL": "http://127.0.0.2:8090", "REFLEX_REDIS_URL": "redis://default:pw@127.0.0.2:6390/0"},
     "set CHROMA_URL and R42_CHROMA_TOKEN"),
])
def test_a_web_machine_without_the_data_machines_addresses_says_which_is_missing(machine, capsys, settings, says):
    for name, value in settings.items():
        machine.setenv(name, value)
    assert main(["serve", "--web-only"]) == 1
    err = capsys.readouterr().err
    assert says in err and "pw@" not in err


def test_a_web_machine_whose_pocketbase_does_not_answer_gives_up_saying_so(machine, capsys):
    machine.setenv("R42_PB_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    machine.setenv("REFLEX_REDIS_URL", "redis://default:secret-pw@127.0.0.1:6390/0")
    machine.setenv("CHROMA_URL", "http://127.0.0.1:8001")
    assert main(["serve", "--web-only", "--start-timeout", "1"]) == 1
    out = capsys.readouterr()
    assert "does not answer; is the data machine up?" in out.err
    assert "secret-pw" not in out.out + out.err  # the Redis password is never printed


def test_a_data_machine_is_the_pocketbase_and_refuses_to_point_at_another(machine, capsys):
    machine.setenv("R42_PB_URL", "http://127.0.0.5:8090")
    assert main(["serve", "--data-only"]) == 1
    assert "--data-only runs the PocketBase" in capsys.readouterr().err


def test_web_only_and_data_only_exclude_each_other(machine, capsys):
    with pytest.raises(SystemExit) as refused:
        main(["serve", "--web-only", "--data-only"])
    assert refused.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
