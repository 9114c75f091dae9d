"""`Admission`'s `queue_timeout_s` on a clock the test moves (tests/clock.py): a queued request waits exactly
that long, a slot freed first wins, and whichever settles the wait first leaves the counters right."""

from __future__ import annotations

import asyncio

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.admission.admission import Admission, Backlog
from rewardfleet.services.gateway.errors import Draining, Overloaded
from rewardfleet.services.gateway.metrics import GatewayMetrics
from tests.clock import FakeClock
from tests.gateway.units import counter


def admission(clock: FakeClock, metrics: GatewayMetrics | None = None) -> Admission:
    return Admission(1, 1 << 30, 4, 30.0, 3, 10, Backlog(), metrics or GatewayMetrics(), timer=clock)


async def queued(gate: Admission, n: int) -> None:
    await eventually_async(lambda: gate.queued == n, interval_s=0, what=f"{n} queued")


async def test_a_queued_request_is_refused_at_queue_timeout_s_not_before() -> None:
    clock, metrics = FakeClock(), GatewayMetrics()
    gate = admission(clock, metrics)
    assert await gate.enter() is None
    waiting = asyncio.create_task(gate.enter())
    await queued(gate, 1)
    clock.advance(29.9)
    await asyncio.sleep(0)  # one turn of the loop: a timeout, had it fired, would settle the wait now
    assert not waiting.done() and gate.queued == 1
    clock.advance(0.1)
    refused = await waiting
    assert isinstance(refused, Overloaded) and "queue_timeout_s=30.0" in refused.message
    assert refused.headers == {"Retry-After": "3"}
    assert counter(metrics, "gateway_admission_rejections", reason="overload") == 1
    assert gate.queued == 0 and gate.active == 1
    gate.leave()
    assert gate.active == 0


async def test_a_slot_freed_before_the_timeout_admits_and_the_timeout_no_longer_counts() -> None:
    clock = FakeClock()
    gate = admission(clock)
    assert await gate.enter() is None
    waiting = asyncio.create_task(gate.enter())
    await queued(gate, 1)
    clock.advance(29.0)
    gate.leave()  # the slot passes to the waiter
    clock.advance(1.0)  # its timeout is reached before the waiter resumes: the reservation stands
    assert await waiting is None and gate.active == 1
    clock.advance(60.0)
    gate.leave()
    assert gate.active == 0 and gate.queued == 0


async def test_a_timeout_reached_first_gives_no_slot_to_the_timed_out_request() -> None:
    clock = FakeClock()
    gate = admission(clock)
    assert await gate.enter() is None
    first = asyncio.create_task(gate.enter())
    await queued(gate, 1)
    clock.advance(10.0)
    second = asyncio.create_task(gate.enter())
    await queued(gate, 2)
    clock.advance(20.0)  # first's 30 s are up, second has 10 s left
    gate.leave()  # in the same instant: the slot goes to second, not to the request that timed out
    assert isinstance(await first, Overloaded)
    assert await second is None and gate.active == 1 and gate.queued == 0


async def test_draining_releases_a_queued_request_before_its_timeout() -> None:
    clock = FakeClock()
    gate = admission(clock)
    assert await gate.enter() is None
    waiting = asyncio.create_task(gate.enter())
    await queued(gate, 1)
    gate.start_draining()
    assert isinstance(await waiting, Draining)
    clock.advance(30.0)  # the cancelled timeout changes nothing
    assert gate.active == 1 and gate.queued == 0
