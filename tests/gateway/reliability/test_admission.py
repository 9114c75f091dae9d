"""`Admission` in-process: FIFO order, the hand-over of a released slot, cancellation, overload, draining, and
the counters /metrics exports. The HTTP behaviour is test_overload.py and test_drain.py beside this file."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from rewardfleet.services.gateway.admission.admission import Admission, Backlog, reserved_body_bytes
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.errors import Draining, GatewayError, Overloaded
from rewardfleet.services.gateway.metrics import GatewayMetrics
from tests.gateway.units import counter


def admission(
    max_inflight: int = 1,
    max_queued: int = 4,
    timeout_s: float = 30.0,
    metrics: GatewayMetrics | None = None,
    max_body_bytes: int = 1 << 30,
) -> Admission:
    return Admission(
        max_inflight, max_body_bytes, max_queued, timeout_s, 3, 10, Backlog(), metrics or GatewayMetrics()
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)  # scheduler passes only: the waiters run to their wait


async def test_waiters_are_admitted_in_arrival_order() -> None:
    gate = admission()
    assert await gate.enter() is None
    order: list[int] = []

    async def wait(i: int) -> None:
        assert await gate.enter() is None
        order.append(i)

    tasks = [asyncio.create_task(wait(i)) for i in range(3)]
    await settle()
    assert gate.queued == 3 and order == []
    for expected in ([0], [0, 1], [0, 1, 2]):
        gate.leave()
        await settle()
        assert order == expected and gate.active == 1  # the slot passes on: never more than max_inflight
    gate.leave()
    assert gate.active == 0
    await asyncio.gather(*tasks)


async def test_a_released_slot_goes_to_the_waiter_not_to_a_newcomer() -> None:
    """The race between `leave` and a new `enter`: the slot is handed to the first waiter before it has run
    again; a request arriving in that instant must queue behind it, not take the slot as well."""
    gate = admission()
    assert await gate.enter() is None
    waiter = asyncio.create_task(gate.enter())
    await settle()
    gate.leave()  # hands the slot to `waiter`, which has not resumed yet
    newcomer = asyncio.create_task(gate.enter())
    await settle()
    assert waiter.done() and waiter.result() is None
    assert not newcomer.done() and gate.active == 1
    gate.leave()
    assert await newcomer is None and gate.active == 1
    gate.leave()
    assert gate.active == 0


async def test_a_waiter_cancelled_after_the_hand_over_passes_the_slot_on() -> None:
    gate = admission()
    assert await gate.enter() is None
    first = asyncio.create_task(gate.enter())
    second = asyncio.create_task(gate.enter())
    await settle()
    gate.leave()  # slot handed to `first`...
    first.cancel()  # ...whose client goes away before it runs
    try:
        admitted_anyway = await first is None  # the cancel came after the hand-over: it owns the slot
    except asyncio.CancelledError:
        admitted_anyway = False  # gave the slot back on its way out
    if admitted_anyway:
        assert gate.active == 1 and not second.done()
        gate.leave()
    assert await second is None  # either way the slot was not lost
    assert gate.active == 1 and gate.queued == 0
    gate.leave()
    assert gate.active == 0


async def test_full_queue_and_slow_slots_are_overload_with_retry_after() -> None:
    metrics = GatewayMetrics()
    gate = admission(max_queued=1, timeout_s=0.05, metrics=metrics)
    assert await gate.enter() is None
    queued = asyncio.create_task(gate.enter())
    await settle()
    refused = await gate.enter()
    assert isinstance(refused, Overloaded) and "max_queued_requests=1" in refused.message
    assert refused.headers == {"Retry-After": "3"} and refused.status_code == 429
    timed_out = await queued
    assert isinstance(timed_out, Overloaded) and "queue_timeout_s" in timed_out.message
    assert counter(metrics, "gateway_admission_rejections", reason="overload") == 2
    assert gate.active == 1 and gate.queued == 0


async def test_pool_backlog_over_the_bound_is_overload() -> None:
    gate = admission()
    gate.backlog.set(11)
    assert isinstance(await gate.enter(), Overloaded)
    gate.backlog.set(10)
    assert await gate.enter() is None


async def test_draining_refuses_new_and_queued_requests() -> None:
    metrics = GatewayMetrics()
    gate = admission(metrics=metrics)
    assert await gate.enter() is None
    queued = asyncio.create_task(gate.enter())
    await settle()
    gate.start_draining()
    refusals: list[GatewayError | None] = [await queued, await gate.enter()]
    assert all(isinstance(r, Draining) and r.status_code == 503 for r in refusals)
    assert counter(metrics, "gateway_admission_rejections", reason="draining") == 2
    gate.leave()  # the admitted request finishes normally
    assert gate.active == 0


async def test_body_bytes_bound_admission_in_arrival_order() -> None:
    """Requests wait while their bodies would not fit; a large one at the head is not overtaken by small ones
    behind it (it would starve), and the bytes of every request that leaves are given back."""
    gate = admission(max_inflight=100, max_body_bytes=1000)
    assert await gate.enter(600) is None
    large = asyncio.create_task(gate.enter(500))
    small = asyncio.create_task(gate.enter(10))
    await settle()
    assert not large.done() and not small.done() and gate.queued == 2
    gate.leave(600)
    await settle()
    assert large.result() is None and small.result() is None
    assert gate.active == 2 and gate.body_bytes == 510
    gate.leave(500)
    gate.leave(10)
    assert gate.active == 0 and gate.body_bytes == 0


async def test_body_bytes_over_the_bound_with_a_full_queue_are_overload() -> None:
    gate = admission(max_inflight=100, max_queued=0, max_body_bytes=1000)
    assert await gate.enter(900) is None
    refused = await gate.enter(200)
    assert isinstance(refused, Overloaded) and refused.headers == {"Retry-After": "3"}
    assert "max_inflight_body_bytes=1000" in refused.message and "900 body bytes" in refused.message
    assert await gate.enter(100) is None  # the bound is bytes, not requests
    # One request larger than the whole budget counts as the whole budget: it can still run alone.
    gate.leave(900)
    gate.leave(100)
    assert await gate.enter(5000) is None and gate.body_bytes == 1000
    gate.leave(5000)
    assert gate.body_bytes == 0


async def test_a_large_waiter_that_goes_away_lets_the_ones_behind_it_in() -> None:
    gate = admission(max_inflight=100, max_body_bytes=1000)
    assert await gate.enter(600) is None
    large = asyncio.create_task(gate.enter(500))
    await settle()
    small = asyncio.create_task(gate.enter(10))
    await settle()
    assert gate.queued == 2
    large.cancel()  # its client went away (a timeout takes the same way out)
    assert await small is None  # admitted, not left waiting for queue_timeout_s
    assert large.cancelled() and gate.body_bytes == 610 and gate.queued == 0


def test_reserved_body_bytes_follow_the_headers() -> None:
    def scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
        return {"headers": list(headers)}

    assert reserved_body_bytes(scope((b"content-length", b"1234")), 4096) == 1234
    assert reserved_body_bytes(scope((b"content-length", b"99999")), 4096) == 4096  # 413 follows
    assert reserved_body_bytes(scope((b"transfer-encoding", b"chunked")), 4096) == 4096
    assert reserved_body_bytes(scope((b"content-length", b"x")), 4096) == 4096
    assert reserved_body_bytes(scope((b"host", b"a")), 4096) == 0


def test_a_body_budget_smaller_than_one_body_stops_start_up() -> None:
    with pytest.raises(ValidationError, match=r"max_inflight_body_bytes \(2048\) must be at least max_body"):
        GatewayConfig(max_body_bytes=4096, max_inflight_body_bytes=2048)
