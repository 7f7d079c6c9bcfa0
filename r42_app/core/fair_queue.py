"""Who reads the next document: a few slots shared fairly between tenants.

Parsing a document takes a child process and seconds to minutes (services/adapters/parse_sandbox.py), so a worker
reads only `slots` files at once. Taken first come, first served, one tenant's flood of slow files would hold every
slot and every other tenant's one-line upload would wait behind all of it. So:

- each tenant has a queue of its own (first come, first served within it);
- one tenant holds at most `share` slots at once (default `slots - 1`: one slot is always left for another
  tenant, so a newcomer never waits behind a running flood; with one slot, the share is that slot);
- when a slot is free, it goes to the waiting tenant that runs the fewest, and among those to the one served
  longest ago (round robin); a tenant never served goes by when its first file asked.

Pure bookkeeping: tickets are any hashable values; `ask` and `done` say which tickets may start now. The
services layer turns that into threads that wait (parse_sandbox.ParseSlots).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass
class _Tenant:
    waiting: deque = field(default_factory=deque)
    running: int = 0
    served: int = -1  # the turn of its last start (-1: never)


class FairQueue:
    def __init__(self, slots: int, share: int | None = None):
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.slots = slots
        self.share = max(1, min(slots, share if share is not None else slots - 1))
        self._tenants: dict[str, _Tenant] = {}
        self._tickets: dict[Hashable, tuple[str, int]] = {}  # ticket -> (tenant, the order it asked in)
        self._granted: set[Hashable] = set()
        self._asked = 0
        self._turn = 0

    @property
    def running(self) -> int:
        return len(self._granted)

    def waiting(self, tenant: str | None = None) -> int:
        if tenant is not None:
            return len(self._tenants[tenant].waiting) if tenant in self._tenants else 0
        return sum(len(t.waiting) for t in self._tenants.values())

    def running_for(self, tenant: str) -> int:
        return self._tenants[tenant].running if tenant in self._tenants else 0

    def granted(self, ticket: Hashable) -> bool:
        return ticket in self._granted

    def ask(self, ticket: Hashable, tenant: str) -> list[Hashable]:
        """`ticket` (new) of `tenant` wants a slot: it waits in its tenant's queue. Returns the tickets that may
        start now (this one among them when it got a slot at once)."""
        if ticket in self._tickets:
            raise ValueError("this ticket has asked already")
        self._tickets[ticket] = (tenant, self._asked)
        self._asked += 1
        self._tenants.setdefault(tenant, _Tenant()).waiting.append(ticket)
        return self._fill()

    def done(self, ticket: Hashable) -> list[Hashable]:
        """`ticket` finished (it ran) or gave up (it waited): its slot or its place is free. Returns the tickets
        that may start now."""
        if ticket not in self._tickets:
            return []
        tenant_name, _ = self._tickets.pop(ticket)
        tenant = self._tenants[tenant_name]
        if ticket in self._granted:
            self._granted.discard(ticket)
            tenant.running -= 1
        else:
            tenant.waiting.remove(ticket)
        if not tenant.waiting and not tenant.running:
            del self._tenants[tenant_name]
        return self._fill()

    def _fill(self) -> list[Hashable]:
        started = []
        while len(self._granted) < self.slots:
            candidates = [(t.running, t.served, self._tickets[t.waiting[0]][1], name)
                          for name, t in self._tenants.items() if t.waiting and t.running < self.share]
            if not candidates:
                break
            name = min(candidates)[3]
            tenant = self._tenants[name]
            ticket = tenant.waiting.popleft()
            tenant.running += 1
            tenant.served = self._turn
            self._turn += 1
            self._granted.add(ticket)
            started.append(ticket)
        return started
