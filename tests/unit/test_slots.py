"""Slots of uploads in flight (core/slots.py): a holder takes one under each key or none, a second take by the
same holder is no second slot, and a slot that is not renewed runs out (a worker that died gives it back)."""

from r42_app.core.slots import SlotBook


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limits(user: str, tenant: str = "t1", per_user: int = 2, per_tenant: int = 3) -> dict[str, int]:
    return {f"user:{user}": per_user, f"tenant:{tenant}": per_tenant}


def test_a_third_upload_of_one_user_or_a_fourth_of_one_tenant_gets_no_slot_and_takes_none():
    book = SlotBook(Clock())
    assert book.take(limits("ann"), "h1", 60) and book.take(limits("ann"), "h2", 60)
    assert not book.take(limits("ann"), "h3", 60)
    assert book.held("tenant:t1") == 2  # the refused one took nothing, not even its tenant's slot
    assert book.take(limits("bob"), "h4", 60)
    assert not book.free(limits("cas"), "h5") and not book.take(limits("cas"), "h5", 60)  # the tenant is full
    assert book.take(limits("dirk", tenant="t2"), "h6", 60)  # another tenant is not
    book.release(limits("ann"), "h1")
    assert book.take(limits("cas"), "h5", 60)


def test_the_same_holder_taking_again_renews_its_slot():
    book = SlotBook(Clock())
    assert book.take(limits("ann", per_user=1), "tab", 60) and book.take(limits("ann", per_user=1), "tab", 60)
    assert book.held("user:ann") == 1 and book.free(limits("ann", per_user=1), "tab")


def test_a_slot_that_is_not_renewed_runs_out():
    clock = Clock()
    book = SlotBook(clock)
    assert book.take(limits("ann", per_user=1), "dead-worker", 60)
    assert book.take(limits("bob", per_user=1), "live-worker", 60)
    clock.now += 40
    assert book.renew(limits("bob"), "live-worker", 60)
    clock.now += 30  # 70 s: the dead worker's slot is gone, the renewed one is not
    assert book.take(limits("ann", per_user=1), "next", 60)
    assert not book.take(limits("bob", per_user=1), "other", 60)
    assert not book.renew(limits("ann"), "dead-worker", 60)  # it lost its slot: nothing renewed
    assert book.held("user:ann") == 1
