"""When the judge probes run, on a clock the test moves: a round at start, the next one `interval_s` after it
(not a second earlier), and `retry_s` after a round that got no answer (the pool not ready yet). A real
`Scorer` calls a real async reward function; the HTTP path against a real judge is test_probes.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.monitors.config import JudgeProbesConfig
from rewardfleet.services.gateway.monitors.probes import JudgeProber
from tests.clock import FakeClock
from tests.gateway.units import async_function, scorer

INTERVAL_S, RETRY_S, RENEW_S = 600.0, 10.0, 3.0


class Judge:
    """Accepts every answer once `ready`; before that every call fails, as a pool still loading does."""

    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.calls = 0

    async def __call__(
        self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any
    ) -> float:
        self.calls += 1
        if not self.ready:
            raise ConnectionError("judge pool not ready")
        return 1.0


@pytest.fixture
def judge(request: pytest.FixtureRequest) -> Judge:
    return Judge(ready=getattr(request, "param", True))


@pytest.fixture
async def probes(judge: Judge) -> AsyncIterator[tuple[JudgeProber, FakeClock]]:
    clock = FakeClock()
    config = JudgeProbesConfig(functions=["judge"], interval_s=INTERVAL_S, retry_s=RETRY_S, answers=[":"],
                               questions=[{"question": "What is 7 * 8?", "answer": "56"}])  # fmt: skip
    loaded = {"judge": async_function("judge", judge)}
    prober = JudgeProber(
        config, scorer(), lambda: loaded, CollectorRegistry(), renew_s=RENEW_S, clock=clock, sleep=clock.sleep
    )
    prober.start()
    yield prober, clock
    await prober.close()


def rounds(prober: JudgeProber) -> int:
    return prober.reports["judge"].rounds


async def parked(clock: FakeClock) -> None:
    """Until both loops (the lease's and the function's) wait on the clock again."""
    await eventually_async(lambda: clock.sleeping == 2, what="the probe loops waiting on the clock")


async def test_the_next_round_is_due_interval_s_after_the_last(probes: tuple[JudgeProber, FakeClock]) -> None:
    prober, clock = probes
    await eventually_async(lambda: rounds(prober) == 1, what="the first round, at start")
    report = prober.reports["judge"]
    assert report.finished_unix_s == clock.now and report.ratio == 1.0  # a judge that accepts ':'
    await parked(clock)
    for _ in range(int((INTERVAL_S - 1) // RENEW_S)):  # the lease renewed every renew_s meanwhile
        clock.advance(RENEW_S)
        await parked(clock)
    assert rounds(prober) == 1 and clock.next_wake() == pytest.approx(RENEW_S)
    clock.advance(INTERVAL_S - RENEW_S * int((INTERVAL_S - 1) // RENEW_S))
    await eventually_async(lambda: rounds(prober) == 2, what="the second round, interval_s after the first")
    assert prober.reports["judge"].finished_unix_s == pytest.approx(1000.0 + INTERVAL_S)


@pytest.mark.parametrize("judge", [False], indirect=True)  # the round at start meets an unready pool
async def test_a_round_with_no_answer_is_retried_after_retry_s(
    judge: Judge, probes: tuple[JudgeProber, FakeClock]
) -> None:
    prober, clock = probes
    await parked(clock)
    assert judge.calls == 1 and rounds(prober) == 0 and prober.reports["judge"].errors == 1
    assert clock.slept[-2:] in ([RENEW_S, RETRY_S], [RETRY_S, RENEW_S])  # the function's loop: retry_s
    judge.ready = True
    clock.advance(RETRY_S - 0.001)
    await parked(clock)
    assert rounds(prober) == 0 and judge.calls == 1  # not before retry_s
    clock.advance(0.001)
    await eventually_async(lambda: rounds(prober) == 1, what="the retry, retry_s after the failure")
    assert prober.reports["judge"].finished_unix_s == pytest.approx(1000.0 + RETRY_S)
