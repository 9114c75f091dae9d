"""The admission rule of a pool shared by tenants: assured shares and headroom.

After Kubernetes' API Priority and Fairness (each priority level assured its concurrency shares, borrowing
what others leave unused); here the tenants of one pool are the parties.

A tenant has *work* in the pool when it holds a slot or has a call waiting. Among the tenants with work of
its priority class or a more urgent one, tenant t's share is capacity x weight_t / (sum of their weights).
Its *demand* is its slots in use plus its waiting calls. Tenant t may take a free slot when:

- t is *within its share*: its demand is at most its share + 2 x headroom (it asks for no more than its
  share, give or take a burst of twice the headroom), or
- the pool keeps `headroom` free slots after it takes one (it borrows what nobody within its share needs), or
- it holds less than its share and no other tenant with work is within its share (every tenant is over its
  share: each is assured its share, and the pool stays work-conserving).

A tenant flooding the pool is over its share, so it stops `headroom` slots short of full while a tenant
within its share has work: that tenant takes a free slot the moment it asks, even while its own demand
fluctuates above its share. Why demand and not slots in use, and why a burst of twice the headroom:
docs/architecture.md, "Notes moved from module docstrings".

Priority classes come first: while a tenant of a more urgent class waits, a less urgent one takes no slot.
The same rule runs in the process (fair.py) and in Redis' Lua (limits/redis_fair_slots.py), which tests
check against this function.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

BURST = 2  # a tenant is within its share while its demand is at most share + BURST x headroom


@dataclass(frozen=True)
class Party:
    """One tenant's state in a pool: slots in use, calls waiting, weight and priority rank (0 first)."""

    held: int
    waiting: int
    weight: float
    rank: int

    @property
    def demand(self) -> int:
        return self.held + self.waiting


def may_take(tenant: str, parties: Mapping[str, Party], capacity: int, headroom: int) -> bool:
    """Whether `tenant` (one of `parties`, with its asking call counted as waiting) may take a slot now."""
    me = parties[tenant]
    free = capacity - sum(p.held for p in parties.values())
    if free <= 0:
        return False
    if any(p.waiting > 0 and p.rank < me.rank for p in parties.values()):
        return False  # a more urgent class waits
    peers = {name: p for name, p in parties.items() if p.demand > 0 and p.rank <= me.rank}
    total_weight = sum(p.weight for p in peers.values())

    def share(p: Party) -> float:
        return capacity * p.weight / total_weight

    def within(p: Party) -> bool:
        return p.demand <= share(p) + BURST * headroom

    if within(me) or free > headroom:
        return True
    return me.held < share(me) and not any(within(p) for name, p in peers.items() if name != tenant)


def headroom_slots(capacity: int, fraction: float, slots: int | None = None) -> int:
    """The free slots a pool of `capacity` keeps for tenants within their share: `slots` when configured,
    else ceil(fraction x capacity), and never the whole pool (at most capacity - 1)."""
    wanted = slots if slots is not None else math.ceil(fraction * capacity)
    return max(0, min(wanted, capacity - 1))
