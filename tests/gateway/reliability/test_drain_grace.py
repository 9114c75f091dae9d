"""The drain's grace period on a clock the test moves: a real SIGTERM to this process starts the drain,
and the hand-over to the previous handler happens when the work is done or when `grace_s` of clock time has
passed, never earlier. The HTTP behaviour (a real gateway under SIGTERM) is test_drain.py beside this file."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.admission.admission import Admission, Backlog
from rewardfleet.services.gateway.admission.drain import Drain
from rewardfleet.services.gateway.metrics import GatewayMetrics
from tests.clock import FakeClock


@pytest.fixture
def handed_over() -> Iterator[list[int]]:
    """The handler the drain hands the signal to once it is done (uvicorn's, in the gateway)."""
    got: list[int] = []
    original = signal.signal(signal.SIGTERM, lambda sig, frame: got.append(sig))
    try:
        yield got
    finally:
        signal.signal(signal.SIGTERM, original)


async def draining(grace_s: float, clock: FakeClock) -> tuple[Drain, Admission, list[str]]:
    admission = Admission(4, 1 << 30, 4, 30.0, 1, 10, Backlog(), GatewayMetrics())
    assert await admission.enter() is None  # one request in flight
    said: list[str] = []
    drain = Drain(admission, grace_s, lambda: said.append("not ready"), clock=clock)
    drain.install()
    os.kill(os.getpid(), signal.SIGTERM)
    await eventually_async(lambda: said == ["not ready"], what="the drain to start on SIGTERM")
    return drain, admission, said


async def rechecked(clock: FakeClock) -> None:
    """Until the drain's loop has read the clock twice more: it has seen the time the test set."""
    reads = clock.reads
    await eventually_async(lambda: clock.reads >= reads + 2, what="the drain re-reading the clock")


async def test_the_grace_period_runs_out_on_the_clock(handed_over: list[int]) -> None:
    clock = FakeClock()
    drain, admission, _ = await draining(30.0, clock)
    assert admission.draining and (await admission.enter()) is not None  # new work is refused
    clock.advance(29.9)
    await rechecked(clock)
    assert handed_over == [] and drain.drained_in_s is None  # within the grace: still waiting
    clock.advance(0.2)
    await eventually_async(lambda: handed_over == [signal.SIGTERM], what="the hand-over after the grace")
    assert drain.drained_in_s == pytest.approx(30.1)
    assert admission.active == 1  # handed over with the request still in flight, as the grace allows


async def test_work_done_within_the_grace_ends_the_drain_then(handed_over: list[int]) -> None:
    clock = FakeClock()
    drain, admission, _ = await draining(30.0, clock)
    clock.advance(5.0)
    await rechecked(clock)
    assert handed_over == []
    admission.leave()
    await eventually_async(lambda: handed_over == [signal.SIGTERM], what="the hand-over once drained")
    assert drain.drained_in_s == pytest.approx(5.0)


async def test_a_second_signal_skips_the_wait(handed_over: list[int]) -> None:
    clock = FakeClock()
    drain, admission, _ = await draining(30.0, clock)
    os.kill(os.getpid(), signal.SIGTERM)
    await eventually_async(lambda: handed_over == [signal.SIGTERM], what="the hand-over on a second signal")
    assert drain.drained_in_s == 0.0 and admission.active == 1  # no clock time passed
