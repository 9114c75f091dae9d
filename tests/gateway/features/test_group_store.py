"""The one `GroupScorer` over its `GroupStore` (groups/store_protocol.py), in-process (group_memory.py): what
the scorer asks of the store, repeated posts during a timeout, late retries, and no finished group kept. The
same scorer over Redis: tests/gateway/state_store/test_redis_groups.py."""

from __future__ import annotations

import asyncio
from typing import Any

from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.memory_store import MemoryGroupStore
from rewardfleet.services.gateway.groups.scorer import GroupScorer
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from tests.gateway.units import async_function, sample, scorer

scored: list[str] = []


async def _length(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
    scored.append(solution_str)
    return float(len(solution_str))


LENGTH = async_function("length", _length)


class RecordingStore(MemoryGroupStore):
    """The in-process store, counting the calls the scorer makes."""

    def __init__(self, config: GroupsConfig) -> None:
        super().__init__(config)
        self.calls: list[str] = []

    async def report(
        self, group_id: str | int, member: str, request: ScoreRequest, result: ScoreResult, lease_s: float
    ) -> str:
        self.calls.append("report")
        return await super().report(group_id, member, request, result, lease_s)

    async def finish(self, group_id: str | int, answers: dict[str, ScoreResult]) -> None:
        self.calls.append("finish")
        await super().finish(group_id, answers)


def config(**fields: Any) -> GroupsConfig:
    return GroupsConfig.model_validate({"builtin_package": None, **fields})


def member(gid: str, index: int, text: str, size: int) -> Any:
    return sample(group_id=gid, group_size=size, group_index=index, solution_str=text)


async def test_each_member_is_reported_once_and_the_group_finished_once() -> None:
    store = RecordingStore(config())
    g = GroupScorer(store.config, scorer(), store)
    posts = [member("r", i, "x" * (i + 1), 3) for i in (0, 1, 0, 2, 1)]  # members 0 and 1 posted twice
    answers = await asyncio.gather(*(g.submit(p, LENGTH, "d", {}) for p in posts))
    assert sorted(store.calls) == ["finish", "report", "report", "report"]
    assert [a.score for a in answers] == [1.0, 2.0, 1.0, 3.0, 2.0]
    assert answers[0] == answers[2] and answers[1] == answers[4]


async def test_a_repeat_during_a_timeout_gets_its_members_own_answer() -> None:
    scored.clear()
    g = GroupScorer(config(timeout_s=0.1), scorer())
    first, repeat = await asyncio.gather(
        g.submit(member("t", 0, "abc", 3), LENGTH, "d", {}),
        g.submit(member("t", 0, "abc", 3), LENGTH, "d", {}),
    )
    assert first.status == "group_timeout" and first == repeat and scored == ["abc"]
    assert first.extra["group"]["received"] == 1 and first.extra["sample_score"] == 3.0
    late = await g.submit(member("t", 0, "abc", 3), LENGTH, "d", {})  # a retry after the answer
    assert late == first and scored == ["abc"]


async def test_every_waiter_is_answered_when_no_finished_group_is_kept() -> None:
    g = GroupScorer(config(finished_groups_kept=0), scorer())
    answers = await asyncio.gather(*(g.submit(member("k", i, "ab", 2), LENGTH, "d", {}) for i in (0, 0, 1)))
    assert [a.status for a in answers] == ["ok"] * 3 and answers[0] == answers[1]
    assert answers[2].extra["group"]["received"] == 2


async def _slow_length(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
    if solution_str == "slow":
        await release.wait()
    return float(len(solution_str))


SLOW = async_function("slow_length", _slow_length)
release = asyncio.Event()


async def test_a_member_still_scoring_when_its_group_times_out_gets_its_timeout_answer() -> None:
    release.clear()
    g = GroupScorer(config(timeout_s=0.1, finished_groups_kept=0), scorer())
    slow = asyncio.create_task(g.submit(member("s", 0, "slow", 2), SLOW, "d", {}))
    async with asyncio.timeout(30):  # a guard only: the answer comes at the group's 0.1 s deadline
        fast = await g.submit(member("s", 1, "ab", 2), SLOW, "d", {})  # times the group out, answered
    assert fast.status == "group_timeout" and not slow.done()
    release.set()  # the slow member reports after its group was answered and forgotten
    late = await slow
    assert late.status == "group_timeout" and late.extra["sample_score"] == 4.0
    assert late.extra["group"]["received"] == 2


async def test_the_store_keys_groups_by_digest_and_1_is_not_the_string_1() -> None:
    store = MemoryGroupStore(config())
    g = GroupScorer(store.config, scorer(), store)
    long_id = "G" * 500
    answers = await asyncio.gather(
        *(
            g.submit(sample(group_id=gid, group_size=1, group_index=0), LENGTH, "d", {})
            for gid in ("1", 1, long_id)
        )
    )
    assert [a.extra["group"]["id"] for a in answers] == ["1", 1, long_id]  # answers name the client's id
    keys = list(store._done)
    assert len(set(keys)) == 3 and all(len(k) == 32 and "GGG" not in k for k in keys)


def _rank(samples: list[dict[str, Any]], scores: list[float | None]) -> list[float]:
    return [float(i) for i in range(len(scores))]


async def test_a_member_still_scoring_when_its_partial_group_is_judged_gets_a_late_answer() -> None:
    from rewardfleet.services.gateway.groups.scorer import GroupFunction

    held = asyncio.Event()  # this test's own: an Event belongs to the loop that first waits on it

    async def held_length(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
        if solution_str == "slow":
            await held.wait()
        return float(len(solution_str))

    fn = async_function("held_length", held_length)
    fns = {
        "rank": GroupFunction(name="rank", fn=_rank, is_async=False, kwargs={}, timeout_s=5.0, version="r")
    }
    g = GroupScorer(config(timeout_s=0.1), scorer())
    slow = asyncio.create_task(g.submit(member_fn("p", 0, "slow", 3), fn, "d", fns))
    async with asyncio.timeout(30):  # a guard only: the answer comes at the group's 0.1 s deadline
        fast = await g.submit(member_fn("p", 1, "ab", 3), fn, "d", fns)
    assert fast.status == "ok" and fast.extra["group_partial"] and fast.extra["members_present"] == 1
    assert fast.extra["members_missing"] == [0, 2] and not slow.done()
    held.set()  # the slow member reports after its group was judged without it
    late = await slow
    assert late.status == "group_timeout" and late.extra["group_late"] and late.score is None
    assert late.error is not None and "1 of 3 members" in late.error.message
    assert late.extra["sample_score"] == 4.0


def member_fn(gid: str, index: int, text: str, size: int) -> Any:
    return sample(group_id=gid, group_size=size, group_index=index, solution_str=text, group_fn="rank")
