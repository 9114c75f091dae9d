"""Per-function limits: token-bucket maths on an injected clock, the token estimate, and the gate's bounds."""

from __future__ import annotations

import asyncio

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.config import FunctionConfig
from rewardfleet.services.gateway.limits.function_limits import (
    FunctionGate,
    TokenBucket,
    estimate_tokens,
    function_gates,
    reported_tokens,
)
from rewardfleet.services.gateway.limits.input_limits import prompt_chars
from tests.clock import FakeClock


def test_bucket_starts_full_and_refills_continuously() -> None:
    clock = FakeClock(100.0)
    bucket = TokenBucket(60, clock)  # one unit per second, up to 60
    assert bucket.wait_s(60) == 0.0
    bucket.take(60)
    assert bucket.wait_s(1) == pytest.approx(1.0)
    clock.now += 0.25
    assert bucket.wait_s(1) == pytest.approx(0.75)
    clock.now += 10
    assert bucket.wait_s(10) == 0.0 and bucket.level == pytest.approx(10.25)


def test_bucket_never_holds_more_than_a_minute_and_caps_a_huge_call() -> None:
    clock = FakeClock(100.0)
    bucket = TokenBucket(120, clock)  # 2 per second
    clock.now += 3600
    bucket.wait_s(1)
    assert bucket.level == 120  # idle for an hour: still one minute's worth
    assert (
        bucket.wait_s(10_000) == 0.0
    )  # larger than the bucket: charged the whole bucket, never waits forever
    bucket.take(10_000)
    assert bucket.level == 0
    assert bucket.wait_s(10_000) == pytest.approx(60.0)


def test_token_estimate_counts_the_prompt_like_the_input_limit() -> None:
    messages = [{"role": "system", "content": "abcd"}, {"role": "user", "content": "efgh", "name": "ignored"}]
    assert prompt_chars(messages) == 8 and prompt_chars("abc") == 3 and prompt_chars(None) == 0
    assert estimate_tokens(messages, "ijkl", "mn") == 4  # ceil((8 + 4 + 2) / 4)
    assert estimate_tokens(None, "", {"not": "a string"}) == 1  # never zero


def test_gates_only_for_functions_with_limits() -> None:
    gates = function_gates(
        {
            "free": FunctionConfig(),
            "judge": FunctionConfig(max_concurrency=2),
            "rpm": FunctionConfig(requests_per_minute=6),
        }
    )
    assert sorted(gates) == ["judge", "rpm"]


async def test_gate_bounds_concurrency() -> None:
    gate = FunctionGate(max_concurrency=2, requests_per_minute=None, tokens_per_minute=None)
    running, peak = 0, 0

    async def call() -> None:
        nonlocal running, peak
        async with gate.hold(1):
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)  # the call's own work while it holds the slot
            running -= 1

    await asyncio.gather(*(call() for _ in range(6)))
    assert peak == 2


def test_reported_tokens_reads_openai_usage() -> None:
    assert reported_tokens({"usage": {"total_tokens": 120}}) == 120
    assert reported_tokens({"usage": {"prompt_tokens": 100, "completion_tokens": 7}}) == 107
    assert reported_tokens({"usage": {"prompt_tokens": 100}}) is None  # half a report is no report
    assert reported_tokens({"usage": {"total_tokens": True}}) is None and reported_tokens({}) is None


async def test_tpm_charges_the_tokens_a_call_reports() -> None:
    gate = FunctionGate(max_concurrency=None, requests_per_minute=None, tokens_per_minute=1000)
    async with gate.hold(10) as charge:
        charge.settle(400)  # the judge used 400 tokens, not the 10 estimated
    bucket = gate._tokens
    assert bucket is not None and 599 <= bucket.level <= 601
    async with gate.hold(10) as charge:
        charge.settle(0)  # used none: the estimate comes back
    assert 599 <= bucket.level <= 602


async def test_rpm_paces_calls_on_the_clock() -> None:
    """A full bucket lets a minute's worth through at once; then each call waits exactly its refill."""
    clock = FakeClock(autojump=True)
    gate = FunctionGate(None, requests_per_minute=60, tokens_per_minute=None, clock=clock, sleep=clock.sleep)
    for _ in range(62):
        async with gate.hold(1):
            pass
    assert clock.slept == [pytest.approx(1.0), pytest.approx(1.0)]
    assert clock.now == pytest.approx(1002.0)


async def test_a_reported_overspend_makes_the_next_call_wait_for_it() -> None:
    clock = FakeClock()
    gate = FunctionGate(None, None, tokens_per_minute=600, clock=clock, sleep=clock.sleep)  # 10 a second
    async with gate.hold(10) as charge:
        charge.settle(600)  # the judge used the whole minute's budget, not the 10 estimated
    waiting = asyncio.create_task(_hold(gate, 10))
    await eventually_async(lambda: clock.sleeping == 1, what="the next call waiting for the bucket")
    assert clock.next_wake() == pytest.approx(1.0) and not waiting.done()
    clock.advance(1.0)
    await waiting


async def _hold(gate: FunctionGate, tokens: int) -> None:
    async with gate.hold(tokens):
        pass
