"""What a tenant's call tells a shared gate when it asks for a slot.

What a tenant's call tells a shared gate when it asks for a slot (limits/redis_fair_slots.py reads it;
tenants/fair.py fills it). A leaf: importing it loads no Redis client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SlotClaim:
    """Who asks for a fleet-wide slot: the tenant, its weight and priority rank, the pool's headroom, and
    how many of this tenant's calls wait for the slots on this replica (the asking one included), read at
    every ask."""

    tenant: str
    weight: float
    rank: int
    headroom: int
    waiting: Callable[[], int]
