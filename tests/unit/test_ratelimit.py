"""Rate limits in core: the chat token bucket and the sign-in failure window (injectable clock)."""

from r42_app.core.ratelimit import FailureLimiter, RateLimiter


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_chat_allows_a_burst_then_asks_to_wait():
    clock = Clock()
    limiter = RateLimiter(per_minute=12, burst=4, clock=clock)
    assert [limiter.check("u") for _ in range(4)] == [0.0] * 4
    assert limiter.check("u") > 0 and limiter.check("other") == 0.0
    clock.now += 5
    assert limiter.check("u") == 0.0


def test_sign_in_failures_block_an_address_until_the_window_ends():
    clock = Clock()
    limiter = FailureLimiter(limit=3, window=60, clock=clock)
    for _ in range(3):
        assert limiter.wait("10.0.0.1") == 0.0
        limiter.failed("10.0.0.1")
    assert 59 < limiter.wait("10.0.0.1") <= 60
    assert limiter.wait("10.0.0.2") == 0.0  # another address is not affected
    clock.now += 61
    assert limiter.wait("10.0.0.1") == 0.0
    limiter.failed("10.0.0.1")  # a new window starts counting from one
    assert limiter.wait("10.0.0.1") == 0.0


def test_failure_windows_that_are_over_are_forgotten():
    clock = Clock()
    limiter = FailureLimiter(limit=1, window=60, clock=clock, max_keys=10)
    for i in range(10):
        limiter.failed(f"a{i}")
    clock.now += 61
    limiter.failed("fresh")
    assert len(limiter._windows) == 1


def test_a_refunded_token_can_be_used_again_but_never_beyond_the_burst():
    now = [0.0]
    limiter = RateLimiter(per_minute=12, burst=2, clock=lambda: now[0])
    assert limiter.check("u") == 0 and limiter.check("u") == 0
    assert limiter.check("u") > 0  # empty
    limiter.refund("u")
    assert limiter.check("u") == 0  # the refused turn's token came back
    limiter.refund("u")
    limiter.refund("u")
    limiter.refund("u")
    assert limiter.check("u") == 0 and limiter.check("u") == 0 and limiter.check("u") > 0  # capped at burst


def test_an_attempt_counts_as_it_goes_out_and_only_failures_stay_counted():
    clock = Clock()
    limiter = FailureLimiter(limit=2, window=60, clock=clock)
    assert limiter.take("10.0.0.1") == 0.0 and limiter.take("10.0.0.1") == 0.0  # two in flight at once
    assert limiter.take("10.0.0.1") > 0  # a third must wait, before either answer came back
    limiter.refund("10.0.0.1")  # one of them was the right password
    assert limiter.take("10.0.0.1") == 0.0
    assert 59 < limiter.take("10.0.0.1") <= 60
    clock.now += 61
    limiter.refund("10.0.0.1")  # a late refund after the window ended changes nothing
    assert limiter.take("10.0.0.1") == 0.0


def test_a_bounded_limiter_forgets_the_least_recently_checked_key_first():
    clock = Clock()
    limiter = RateLimiter(per_minute=12, burst=1, clock=clock, max_keys=3)
    for key in ("a", "b", "c"):
        assert limiter.check(key) == 0.0
    assert limiter.check("a") > 0  # a is empty, and now the most recent
    assert limiter.check("d") == 0.0  # one too many: b, the least recently checked, goes
    assert set(limiter._buckets) == {"a", "c", "d"}
    assert limiter.check("a") > 0  # a was kept: still empty
    assert limiter.check("b") == 0.0  # b was forgotten: a fresh bucket
