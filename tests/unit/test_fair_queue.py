"""Parsing is fair between tenants (core/fair_queue.py): a queue per tenant, served round robin, and one tenant never
holds every slot, so another tenant's file starts at once however many files the first has waiting."""

import pytest

from r42_app.core.fair_queue import FairQueue


def test_a_flood_of_one_tenant_leaves_a_slot_for_the_next_tenant():
    q = FairQueue(slots=2)
    started = []
    for n in range(4):
        started += q.ask(f"acme-{n}", "acme")
    assert started == ["acme-0"]  # one slot of two: the other stays free for someone else
    assert q.waiting("acme") == 3
    assert q.ask("demo-0", "demo") == ["demo-0"]  # the demo admin's one-line file starts at once
    assert q.done("demo-0") == []  # acme is at its share: the freed slot waits for another tenant
    assert q.done("acme-0") == ["acme-1"]  # acme's queue goes on, first come first served
    assert q.running == 1


def test_waiting_tenants_are_served_round_robin_not_first_come():
    q = FairQueue(slots=1)
    order = q.ask("a1", "a")
    for ticket, tenant in (("a2", "a"), ("a3", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c")):
        order += q.ask(ticket, tenant)
    running = order[-1]
    while running is not None:
        nxt = q.done(running)
        order += nxt
        running = nxt[0] if nxt else None
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_the_tenant_running_fewest_gets_a_freed_slot():
    q = FairQueue(slots=3, share=2)
    assert q.ask("a1", "a") + q.ask("a2", "a") + q.ask("a3", "a") == ["a1", "a2"]  # a's share is 2
    assert q.ask("b1", "b") == ["b1"]  # the third slot
    assert q.ask("b2", "b") == [] and q.ask("c1", "c") == []
    assert q.done("a1") == ["c1"]  # c runs nothing; a and b run one each
    assert q.done("c1") == ["a3"]  # a and b run one each; a's last start (a2) is older than b's (b1)
    assert q.done("b1") == ["b2"]


def test_a_ticket_that_gives_up_leaves_its_place_and_one_slot_is_every_tenants():
    q = FairQueue(slots=1)
    assert q.share == 1
    assert q.ask("a1", "a") == ["a1"] and q.ask("b1", "b") == [] and q.ask("c1", "c") == []
    assert q.done("b1") == []  # b gave up waiting
    assert q.done("a1") == ["c1"]
    assert q.done("c1") == [] and q.running == 0 and q.waiting() == 0
    assert q.done("never-asked") == []
    with pytest.raises(ValueError):
        FairQueue(slots=0)
