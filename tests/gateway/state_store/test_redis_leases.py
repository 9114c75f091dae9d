"""Lease renewal with one timer per owner (redis_leases.py) against a real redis-server: long holds keep their
lease in Redis, short ones are never renewed, and the timer stops when nothing is held."""

from __future__ import annotations

from typing import Any

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.limits.choose_store import gate_for
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from rewardfleet.services.gateway.state_store.redis_leases import Leases, new_token
from rewardfleet.services.gateway.state_store.redis_scripts import LEASE_RENEW
from tests.clock import FakeClock
from tests.gateway.state_store.helpers import renewals


async def test_long_holds_are_renewed_short_ones_are_not(replicas: list[RedisBackend]) -> None:
    backend = replicas[0]
    store = backend.store
    leases = Leases(store, "test_renew", store.script(LEASE_RENEW), lease_s=0.3)
    long_key, short_key = store.key("lease", "long"), store.key("lease", "short")
    long_token, short_token = new_token(), new_token()
    assert len(long_token) == 32 and long_token != short_token
    await store.client.set(long_key, long_token, px=300)
    await store.client.set(short_key, short_token, px=300)
    held = leases.hold([long_key], [long_token, 300])
    for _ in range(20):  # many short holds, each over before a renewal is due
        leases.drop(leases.hold([short_key], [short_token, 300]))
    # Until the long hold has been renewed three times and Redis has expired the short lease (set with the
    # long one, never renewed): signals, not a guessed duration.
    await eventually_async(lambda: renewals(backend, "test_renew") >= 3, what="3 renewals of the long hold")

    async def short_expired() -> bool:
        return await store.client.get(short_key) is None

    await eventually_async(short_expired, what="Redis expiring the short lease")
    assert await store.client.get(long_key) == long_token.encode()  # renewed all along
    assert await store.client.get(short_key) is None  # never renewed: expired
    leases.drop(held)
    await eventually_async(lambda: leases._timer is None, what="the timer seeing nothing held and stopping")
    assert len(leases) == 0
    sent = renewals(backend, "test_renew")
    assert 3 <= sent <= 12  # one every 1/3 to 1/2 of the lease, for the long hold only
    # No stray renewal once nothing is held: on a clock, over any time, in the test below.
    assert renewals(backend, "test_renew") == sent


def record_sends(store: Any) -> list[str]:
    """The ops `store.send` was given, in order, counted as they are sent (not when Redis answers)."""
    sent: list[str] = []
    send = store.send

    def recording(op: str, pending: Any, context: str) -> None:
        sent.append(op)
        send(op, pending, context)

    store.send = recording
    return sent


async def test_renewals_follow_the_clock_and_stop_with_the_last_hold(replicas: list[RedisBackend]) -> None:
    """The timer on a clock the test moves (lease 30 s: a tick every 5 s, a renewal once a hold is 10 s old),
    the renewals sent to a real Redis."""
    backend = replicas[0]
    store = backend.store
    clock = FakeClock()
    leases = Leases(store, "clock_renew", store.script(LEASE_RENEW), lease_s=30.0, timer=clock)
    sent = record_sends(store)
    key, token = store.key("lease", "clocked"), new_token()
    await store.client.set(key, token, px=30_000)
    held = leases.hold([key], [token, 60_000])  # a renewal sets 60 s: Redis shows when one arrived
    clock.advance(5.0)
    assert sent == []  # the first tick: the hold is 5 s old, under a third of the lease
    clock.advance(5.0)
    assert sent == ["clock_renew"]

    async def renewed() -> bool:
        return await store.client.pttl(key) > 30_000

    await eventually_async(renewed, what="the renewal in Redis")
    for _ in range(20):  # short holds, each dropped before its first tick: never renewed
        leases.drop(leases.hold([key], [token, 60_000]))
    clock.advance(10.0)
    assert sent == ["clock_renew"] * 2  # the long hold again, 10 s after its last renewal; no short one
    leases.drop(held)
    clock.advance(5.0)
    assert leases._timer is None and len(leases) == 0  # the tick found nothing held and stopped
    clock.advance(3600.0)
    assert sent == ["clock_renew"] * 2  # an hour on: no stray renewal


async def test_a_slot_held_longer_than_its_lease_stays_taken(replicas: list[RedisBackend]) -> None:
    first, second = (gate_for(r, "judge", 1, None, None, 0.3) for r in replicas[:2])
    async with first.hold(1):
        # Held until its lease has been renewed past three lifetimes (0.3 s each), not for a guessed duration.
        await eventually_async(lambda: renewals(replicas[0], "slot_renew") >= 3, what="3 slot renewals")
        assert await second._acquire(keys=[second.slots_key], args=["other", 300, 1]) == 0  # type: ignore[attr-defined]
    assert await second._acquire(keys=[second.slots_key], args=["other", 300, 1]) == 1  # type: ignore[attr-defined]


async def test_a_tick_renews_its_holds_in_bounded_batches_and_names_a_lost_lease(
    replicas: list[RedisBackend], caplog: Any
) -> None:
    """1,200 holds due in one tick: three script calls (500, 500, 200 holds), not 1,200. A lease another
    token took meanwhile is not extended and is logged by its own key; every other lease is extended."""
    backend = replicas[0]
    store = backend.store
    clock = FakeClock()
    leases = Leases(store, "batch_renew", store.script(LEASE_RENEW), lease_s=30.0, timer=clock)
    sent = record_sends(store)
    keys = [store.key("lease", f"batch{i}") for i in range(1200)]
    tokens = [new_token() for _ in keys]
    async with store.client.pipeline(transaction=False) as pipe:
        for key, token in zip(keys, tokens, strict=True):
            pipe.set(key, token, px=30_000)
        await pipe.execute()
    held = [leases.hold([key], [token, 60_000]) for key, token in zip(keys, tokens, strict=True)]
    stolen = keys[777]
    await store.client.set(stolen, b"t" * 32, px=30_000)  # another holder's now
    with caplog.at_level("WARNING", logger="rewardfleet.services.gateway.state_store.redis_leases"):
        clock.advance(10.0)
        assert sent == ["batch_renew"] * 3
        await store.pipeliner.drain()
    lost = [r.getMessage() for r in caplog.records if "was lost" in r.getMessage()]
    assert lost == [f"batch_renew: the lease {stolen} was lost before its renewal"]
    async with store.client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.pttl(key)
        ttls = await pipe.execute()
    assert all(ttl > 30_000 for i, ttl in enumerate(ttls) if i != 777)  # every other lease extended to 60 s
    assert ttls[777] <= 30_000 and await store.client.get(stolen) == b"t" * 32  # the thief's, untouched
    assert renewals(backend, "batch_renew") == 3
    for ident in held:
        leases.drop(ident)


async def test_slot_renewals_of_one_tick_go_in_one_call(replicas: list[RedisBackend]) -> None:
    """Several slots held by one gateway, renewed by one SLOT_RENEW call per tick, each kept in its set."""
    gate = gate_for(replicas[0], "judge", 8, None, None, 30.0)
    clock = FakeClock()
    store = replicas[0].store
    gate._leases.timer = clock  # type: ignore[attr-defined]
    sent = record_sends(store)
    holds = [gate.hold(1) for _ in range(5)]
    for hold in holds:
        await hold.__aenter__()
    before = await store.client.zrange(gate.slots_key, 0, -1, withscores=True)  # type: ignore[attr-defined]
    clock.advance(5.0)
    clock.advance(5.0)
    assert sent == ["slot_renew"]
    await store.pipeliner.drain()
    after = await store.client.zrange(gate.slots_key, 0, -1, withscores=True)  # type: ignore[attr-defined]
    assert len(after) == 5 and {m for m, _ in after} == {m for m, _ in before}
    old, new = dict(before), dict(after)
    assert all(new[m] > old[m] for m in old)  # every slot's expiry moved on
    for hold in holds:
        await hold.__aexit__(None, None, None)
