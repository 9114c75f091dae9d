"""Fleet-wide budgets against a real redis-server: concurrency leases, RPM/TPM buckets, usage settlement."""

from __future__ import annotations

import asyncio
import time
from typing import cast

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.limits.choose_store import gate_for
from rewardfleet.services.gateway.limits.redis_gate import RedisGate
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.gateway.state_store.helpers import record_calls


async def test_max_concurrency_holds_across_replicas(replicas: list[RedisBackend]) -> None:
    gates = [gate_for(r, "judge", 2, None, None, 10.0) for r in replicas]
    running, peak, done = 0, 0, 0

    async def call(gate: object) -> None:
        nonlocal running, peak, done
        async with gate.hold(1):  # type: ignore[attr-defined]
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.05)  # the call's own work while it holds the slot
            running -= 1
            done += 1

    await asyncio.gather(*(call(g) for g in gates for _ in range(3)))
    assert (peak, done) == (2, 9)
    assert await replicas[0].store.client.zcard(gates[0].slots_key) == 0  # type: ignore[attr-defined]


async def test_slot_of_a_dead_replica_is_freed_by_its_lease(replicas: list[RedisBackend]) -> None:
    gate = gate_for(replicas[0], "judge", 1, None, None, 10.0)
    assert isinstance(gate, RedisGate)
    # a replica took the only slot with a 200 ms lease and died without releasing or renewing it
    assert await gate._acquire(keys=[gate.slots_key], args=["dead", 200, 1]) == 1
    async with gate.hold(1):
        assert await replicas[0].store.client.zscore(gate.slots_key, "dead") is None


async def test_rpm_bucket_is_atomic_across_replicas(replicas: list[RedisBackend]) -> None:
    """120 takes race for a 100-per-minute bucket from three replicas: exactly the bucket's worth succeed
    (plus what refilled while they ran), the rest are told how long to wait."""
    gates = [gate_for(r, "judge", None, 100.0, None, 10.0) for r in replicas]
    started = time.monotonic()
    replies = await asyncio.gather(
        *(g._take(keys=[g.rpm_key, g.tpm_key], args=[100, 0, 1]) for g in gates for _ in range(40))  # type: ignore[attr-defined]
    )
    refilled = (time.monotonic() - started) * 100 / 60
    taken = sum(1 for r in replies if r == 0)
    assert 100 <= taken <= 100 + int(refilled) + 1
    assert all(0 < r <= 600 for r in replies if r != 0)  # one request's refill at 100/min is 600 ms


async def test_tpm_counts_the_tokens_the_judge_reports(replicas: list[RedisBackend]) -> None:
    gate = gate_for(replicas[0], "judge", None, None, 1000.0, 10.0)
    calls = record_calls(replicas[0].store)
    async with gate.hold(10) as charge:
        charge.settle(400)  # the judge's answer said it used 400 tokens, not the 10 estimated
    await eventually_async(
        lambda: "bucket_settle" in calls
    )  # the correction is sent in the background: Redis ran it
    level = float(cast(bytes, await replicas[1].store.client.hget(gate.tpm_key, "l")))  # type: ignore[attr-defined]
    assert 595 <= level <= 602  # 1000 - 400, plus the refill of a few ms
