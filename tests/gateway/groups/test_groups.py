"""`GroupScorer` in-process over the real `Scorer`: answers on completion, the group function, repeated posts,
the timeout, and the bounds. End to end: tests/gateway/test_advanced.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rewardfleet.services.gateway.errors import GroupRequestError, TooManyOpenGroups
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.memory_store import MemoryGroupStore
from rewardfleet.services.gateway.groups.scorer import GroupFunction, GroupScorer
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


async def test_a_partial_group_is_judged_over_the_members_present_and_a_late_one_told_so() -> None:
    calls.clear()
    g = groups(timeout_s=0.2)
    fns = {"rank": RANK}
    present = await asyncio.gather(
        *(g.submit(member("p1", i, "x" * (i + 1), size=4, group_fn="rank"), LENGTH, "d", fns) for i in (0, 2))
    )
    assert calls == [2]  # the group function ran once, over the two members present
    assert [a.status for a in present] == ["ok", "ok"] and [a.score for a in present] == [0.0, 1.0]
    extra = present[1].extra
    assert extra["group_partial"] is True and extra["members_missing"] == [1, 3]
    assert (extra["members_present"], extra["members_expected"]) == (2, 4)
    late = await g.submit(member("p1", 1, "zz", size=4, group_fn="rank"), LENGTH, "d", fns)
    assert late.status == "group_timeout" and late.score is None and late.error is not None
    assert late.error.type == "GroupTimeout" and "2 of 4 members" in late.error.message
    assert late.extra["group_late"] is True and calls == [2]  # not scored, nothing re-run
    again = await g.submit(member("p1", 0, "x", size=4, group_fn="rank"), LENGTH, "d", fns)
    assert again == present[0]  # a retry of a present member: the same answer


async def test_score_partial_false_keeps_the_timeout() -> None:
    calls.clear()
    no_partial = GroupFunction(
        name="rank", fn=_rank, is_async=False, kwargs={}, timeout_s=5.0, version="r1", score_partial=False
    )
    g = groups(timeout_s=0.05)
    result = await g.submit(
        member("p2", 0, "abc", size=3, group_fn="rank"), LENGTH, "d", {"rank": no_partial}
    )
    assert result.status == "group_timeout" and result.score is None and calls == []
