"""`GroupScorer` in-process over the real `Scorer`: answers on completion, the group function, repeated posts,
the timeout, and the bounds. End to end: tests/gateway/test_advanced.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rewardfleet.services.gateway.config.features import GroupsConfig
from rewardfleet.services.gateway.errors import GroupRequestError, TooManyOpenGroups
from rewardfleet.services.gateway.features.group_memory import MemoryGroupStore
from rewardfleet.services.gateway.features.groups import GroupFunction, GroupScorer
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from tests.gateway.units import async_function, sample, scorer


async def _length(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
    return float(len(solution_str))


LENGTH = async_function("length", _length)
calls: list[int] = []


def _rank(samples: list[dict[str, Any]], scores: list[float | None]) -> list[float]:
    calls.append(len(samples))
    order = sorted(range(len(scores)), key=lambda i: scores[i] or 0.0)
    return [float(order.index(i)) for i in range(len(scores))]


RANK = GroupFunction(name="rank", fn=_rank, is_async=False, kwargs={}, timeout_s=5.0, version="r1")


class ObservedStore(MemoryGroupStore):
    """The in-process store, setting an event when a member has joined and when one has reported its score:
    what a test waits for instead of a sleep."""

    def __init__(self, config: GroupsConfig) -> None:
        super().__init__(config)
        self.joined, self.reported = asyncio.Event(), asyncio.Event()

    async def join(self, group_id: str, member: str, size: int, fn_name: str | None) -> tuple[str, float]:
        try:
            return await super().join(group_id, member, size, fn_name)
        finally:
            self.joined.set()

    async def report(
        self, group_id: str, member: str, request: ScoreRequest, result: ScoreResult, lease_s: float
    ) -> str:
        try:
            return await super().report(group_id, member, request, result, lease_s)
        finally:
            self.reported.set()


def groups(**config: Any) -> GroupScorer:
    settings = GroupsConfig.model_validate({"builtin_package": None, **config})
    return GroupScorer(settings, scorer(), ObservedStore(settings))


def observed(g: GroupScorer) -> ObservedStore:
    assert isinstance(g.store, ObservedStore)
    return g.store


def member(gid: str, index: int, text: str, size: int = 2, **fields: Any) -> Any:
    return sample(group_id=gid, group_size=size, group_index=index, solution_str=text, **fields)


async def test_members_are_answered_together_with_the_group_function() -> None:
    calls.clear()
    g = groups()
    fns = {"rank": RANK}
    first = asyncio.create_task(g.submit(member("g1", 0, "long", group_fn="rank"), LENGTH, "d", fns))
    await asyncio.wait_for(observed(g).reported.wait(), 10)  # the first member is scored and reported
    assert not first.done()  # waits for the rest of its group
    second = await g.submit(member("g1", 1, "s", group_fn="rank"), LENGTH, "d", fns)
    first_result = await first
    assert (first_result.score, second.score) == (1.0, 0.0) and calls == [2]
    assert first_result.extra["sample_score"] == 4.0 and first_result.extra["group"]["fn"] == "rank"
    again = await g.submit(member("g1", 1, "s", group_fn="rank"), LENGTH, "d", fns)  # a client retry
    assert again == second and calls == [2]


async def test_an_incomplete_group_times_out() -> None:
    g = groups(timeout_s=0.05)
    result = await g.submit(member("g2", 0, "abc", size=3), LENGTH, "d", {})
    assert result.status == "group_timeout" and result.score is None
    assert result.extra["sample_score"] == 3.0 and result.error is not None


async def test_bad_members_and_too_many_groups() -> None:
    g = groups(max_open_groups=1, timeout_s=5)
    with pytest.raises(GroupRequestError):
        await g.submit(member("g3", 2, "x"), LENGTH, "d", {})  # index not below size
    with pytest.raises(GroupRequestError):
        await g.submit(member("g3", 0, "x", group_fn="missing"), LENGTH, "d", {})
    waiting = asyncio.create_task(g.submit(member("g3", 0, "x"), LENGTH, "d", {}))
    await asyncio.wait_for(observed(g).joined.wait(), 10)  # g3 is open with one member
    with pytest.raises(GroupRequestError):
        await g.submit(member("g3", 1, "x", size=3), LENGTH, "d", {})  # another group_size
    with pytest.raises(TooManyOpenGroups):
        await g.submit(member("g4", 0, "x"), LENGTH, "d", {})
    await g.submit(member("g3", 1, "y"), LENGTH, "d", {})
    assert (await waiting).status == "ok"
