"""A group's deadline (`timeout_s` from its first member) on a clock the test moves (tests/clock.py), in
process: a group still incomplete is answered `group_timeout` at its deadline, not before, and one completed
in time is answered in full. No test waits the deadline out in wall time."""

from __future__ import annotations

import asyncio
from typing import Any

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.scorer import GroupScorer
from tests.clock import FakeClock
from tests.gateway.units import async_function, sample, scorer


async def _length(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
    return float(len(solution_str))


LENGTH = async_function("length", _length)


def groups(clock: FakeClock) -> GroupScorer:
    config = GroupsConfig.model_validate({"builtin_package": None, "timeout_s": 30.0})
    return GroupScorer(config, scorer(), timer=clock)


def member(gid: str, index: int, text: str) -> Any:
    return sample(group_id=gid, group_size=2, group_index=index, solution_str=text)


async def armed(clock: FakeClock) -> None:
    """Until the group's waiter waits on the clock again (it re-reads the state, then sets a timer)."""
    await eventually_async(lambda: clock.timers >= 1, interval_s=0, what="the waiter's timer")


async def test_an_incomplete_group_times_out_at_its_deadline_not_before() -> None:
    clock = FakeClock()
    g = groups(clock)
    first = asyncio.create_task(g.submit(member("d", 0, "abc"), LENGTH, "d", {}))
    await armed(clock)
    clock.advance(29.9)
    await armed(clock)  # woke, re-read the time (29.9 s of 30) and waits again
    assert not first.done()
    clock.advance(0.1)
    async with asyncio.timeout(10):  # a guard only: the clock above reached the deadline
        answer = await first
    assert answer.status == "group_timeout" and answer.extra["group"]["received"] == 1
    assert answer.extra["sample_score"] == 3.0
    late = await g.submit(member("d", 1, "ab"), LENGTH, "d", {})  # past the deadline: not scored
    assert late.status == "group_timeout" and late.extra["group"]["received"] == 1


async def test_a_group_completed_before_its_deadline_is_answered_in_full() -> None:
    clock = FakeClock()
    g = groups(clock)
    first = asyncio.create_task(g.submit(member("c", 0, "abc"), LENGTH, "d", {}))
    await armed(clock)
    clock.advance(29.0)
    second = await g.submit(member("c", 1, "ab"), LENGTH, "d", {})
    async with asyncio.timeout(10):  # a guard only: the second member completes the group
        answer = await first
    assert answer.status == second.status == "ok"
    assert answer.extra["group"]["received"] == second.extra["group"]["received"] == 2
    clock.advance(60.0)  # the deadline passing after the answer changes nothing
    assert await g.submit(member("c", 0, "abc"), LENGTH, "d", {}) == answer
