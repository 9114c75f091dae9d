"""The admission rule (tenants/shares.py): assured shares, the headroom kept for tenants within their share,
work conservation, priority classes; and its Lua twin (limits/redis_fair_slots.py) against a real
redis-server, compared with the Python rule over random pool states."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.limits.redis_fair_slots import FairSlots
from rewardfleet.services.gateway.limits.slot_claim import SlotClaim
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from rewardfleet.services.gateway.tenants.shares import Party, headroom_slots, may_take
from tests.support.state_store import make_backend


def parties(**state: tuple[int, int]) -> dict[str, Party]:
    """tenant=(held, waiting), weight 1, one class."""
    return {name: Party(held, waiting, 1.0, 1) for name, (held, waiting) in state.items()}


def test_a_flooding_tenant_leaves_the_headroom_free() -> None:
    # 16 slots, headroom 2: b holds 5 (within its share of 8), a holds 9 and has 40 more waiting.
    state = parties(a=(9, 40), b=(5, 0))
    assert not may_take("a", state, 16, 2)  # 2 free: a would leave only 1
    assert may_take("a", parties(a=(8, 40), b=(5, 0)), 16, 2)  # 3 free: a may borrow one


def test_a_tenant_within_its_share_takes_the_last_free_slot() -> None:
    # b posts at its share: its demand fluctuates above 8, by up to twice the headroom, and it is served.
    assert may_take("b", parties(a=(6, 40), b=(9, 3)), 16, 2)
    # b asking for more than share + 2 x headroom is over its share: the last slots go to a, under its own
    assert not may_take("b", parties(a=(6, 40), b=(9, 4)), 16, 2)
    assert may_take("a", parties(a=(6, 40), b=(9, 4)), 16, 2)


def test_alone_a_tenant_takes_every_slot() -> None:
    assert may_take("a", parties(a=(15, 40)), 16, 2)
    assert not may_take("a", parties(a=(16, 40)), 16, 2)


def test_tenants_over_their_share_are_each_assured_it() -> None:
    # Both flood: the last slots go to the one under its share; none to the one at it.
    assert may_take("b", parties(a=(8, 40), b=(6, 40)), 16, 2)
    assert not may_take("a", parties(a=(8, 40), b=(6, 40)), 16, 2)


def test_weights_set_the_share() -> None:
    state = {"a": Party(10, 40, 2.0, 1), "b": Party(4, 40, 1.0, 1)}  # shares 10.67 and 5.33
    assert may_take("a", state, 16, 2)
    assert may_take("b", state, 16, 2)
    state = {"a": Party(11, 40, 2.0, 1), "b": Party(4, 40, 1.0, 1)}
    assert not may_take("a", state, 16, 2) and may_take("b", state, 16, 2)


def test_a_more_urgent_class_goes_first() -> None:
    state = {"eval": Party(0, 1, 1.0, 0), "train": Party(2, 1, 1.0, 1)}
    assert not may_take("train", state, 16, 2)
    assert may_take("eval", state, 16, 2)
    # the urgent class counts only tenants of its class or more urgent: it is alone, all slots are its
    assert may_take("eval", {"eval": Party(15, 5, 1.0, 0), "train": Party(0, 9, 1.0, 1)}, 16, 2)


def test_headroom_slots() -> None:
    assert headroom_slots(16, 0.1) == 2
    assert headroom_slots(16, 0.05) == 1  # the default fraction
    assert headroom_slots(4, 0.1) == 1
    assert headroom_slots(1, 0.1) == 0  # never the whole pool
    assert headroom_slots(16, 0.1, 5) == 5
    assert headroom_slots(16, 0.0) == 0


# ---- the Lua twin on a real redis-server ---------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("shares-redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def backend(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[RedisBackend]:
    replica = make_backend(redis_server.url, f"shares-{uuid.uuid4().hex[:8]}:")
    await replica.start()
    try:
        yield replica
    finally:
        await replica.close()


async def _lua_may_take(
    backend: RedisBackend, case: int, me: str, state: dict[str, Party], capacity: int, headroom: int
) -> bool:
    """Write `state` as replicas would have left it (leases, waiting entries, parties), then ask for `me`."""
    store = backend.redis
    assert store is not None
    slots = FairSlots(store, store.key("case", str(case)), 10_000)
    client = store.client
    slots_key, waiting_key, demand_key, parties_key = slots.keys
    for name, party in state.items():
        await client.hset(parties_key, name, f"{party.weight!r} {party.rank}")
        for index in range(party.held):
            await client.zadd(slots_key, {f"{name}|held{index}": 2**50})
        if name != me and party.waiting:
            await client.zadd(waiting_key, {f"{name}|w": 2**50})
            await client.hset(demand_key, f"{name}|w", party.waiting)
    me_party = state[me]
    claim = SlotClaim(me, me_party.weight, me_party.rank, headroom, lambda: me_party.waiting)
    return await slots.try_take(f"{me}|ask", capacity, claim)


async def test_the_lua_rule_is_the_python_rule(backend: RedisBackend) -> None:
    rng = random.Random(39)
    disagreements = []
    admitted = 0
    for case in range(300):
        capacity = rng.choice([2, 4, 8, 16])
        headroom = headroom_slots(capacity, rng.choice([0.0, 0.1, 0.25]))
        names = ["a", "b", "c"][: rng.choice([1, 2, 3])]
        state: dict[str, Party] = {}
        room = capacity
        for name in names:
            held = rng.randint(0, room)
            room -= held
            state[name] = Party(
                held, rng.choice([0, 0, 1, 2, 5, 40]), rng.choice([1.0, 2.0]), rng.choice([0, 1])
            )
        me = rng.choice(names)
        state[me] = Party(state[me].held, max(1, state[me].waiting), state[me].weight, state[me].rank)
        want = may_take(me, state, capacity, headroom)
        got = await _lua_may_take(backend, case, me, state, capacity, headroom)
        admitted += want
        if got != want:
            disagreements.append((me, state, capacity, headroom, want, got))
    assert not disagreements, disagreements[:3]
    assert 30 < admitted < 270  # the random states exercise both answers


async def test_a_waiter_of_a_dead_replica_stops_counting(backend: RedisBackend) -> None:
    """A waiting entry lives `wait_lease_ms` unless renewed: a replica that died with a waiting call of an
    urgent tenant does not hold the pool back for longer."""
    store = backend.redis
    assert store is not None
    slots = FairSlots(store, store.key("dead"), 10_000)
    _, waiting_key, demand_key, parties_key = slots.keys
    await store.client.hset(parties_key, "urgent", "1.0 0")
    await store.client.zadd(waiting_key, {"urgent|gone": 0})  # its lease ran out long ago
    await store.client.hset(demand_key, "urgent|gone", 3)
    claim = SlotClaim("train", 1.0, 1, 0, lambda: 1)
    assert await slots.try_take("train|ask", 4, claim)
    assert await store.client.hget(demand_key, "urgent|gone") is None


async def test_slots_of_a_dead_replica_stop_counting_for_their_tenant(backend: RedisBackend) -> None:
    """A tenant's slots are its live leases: a replica that died holding them (no renewal) frees them, and the
    tenant's count with them, when the leases run out."""
    store = backend.redis
    assert store is not None
    slots = FairSlots(store, store.key("crash"), 10_000)
    slots_key, _, _, parties_key = slots.keys
    await store.client.hset(parties_key, "a", "1.0 1")
    await store.client.zadd(slots_key, {"a|dead1": 0, "a|dead2": 0})  # leases that ran out
    claim = SlotClaim("b", 1.0, 1, 0, lambda: 1)
    assert await slots.try_take("b|ask1", 2, claim)
    assert await slots.try_take("b|ask2", 2, claim)  # both of the dead replica's slots were free
    assert not await slots.try_take("b|ask3", 2, claim)
    assert await store.client.zcard(slots_key) == 2
