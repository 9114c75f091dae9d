"""Fleet-wide group scoring against a real redis-server: members spread over three replicas get exactly the
answers one in-process GroupScorer gives; repeats, timeouts, bounds and mismatches behave as in-process."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any, cast

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.errors import GroupRequestError, TooManyOpenGroups
from rewardfleet.services.gateway.groups.choose_store import group_scorer_for
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.scorer import GroupScorer, load_group_functions
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.gateway.state_store.helpers import request, result

FNS = load_group_functions(GroupsConfig())  # the built-in group functions (reward_fns.groups)


class LengthScorer:
    """Stands in for the Scorer: scores a sample by the length of its solution, counting the calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def score(self, req: ScoreRequest, fn: Any, label: str) -> ScoreResult:
        self.calls += 1
        await asyncio.sleep(random.random() * 0.02)  # a scorer's varying latency (the behaviour)
        return result(req, float(len(req.solution_str)))


def member(gid: str, index: int, size: int = 8, **more: Any) -> ScoreRequest:
    return request(
        f"{gid}-p", "x" * ((index * 7) % 5 + 1), group_id=gid, group_size=size, group_index=index, **more
    )


def essence(answer: ScoreResult) -> tuple[Any, ...]:
    return (answer.score, answer.status, answer.extra["sample_score"], answer.extra["group"], answer.error)


def scorers(replicas: list[RedisBackend], config: GroupsConfig) -> tuple[list[Any], LengthScorer]:
    counter = LengthScorer()
    return [group_scorer_for(r, config, counter) for r in replicas], counter


def record_joins(fleet: list[Any]) -> list[str]:
    """The statuses Redis answers each member's join with, on every replica: what a test waits for (a member
    has joined its group) instead of sleeping."""
    seen: list[str] = []
    for groups in fleet:
        join = groups.store.join

        async def recording(*args: Any, join: Any = join) -> tuple[str, float]:
            status, value = await join(*args)
            seen.append(status)
            return status, value

        groups.store.join = recording
    return seen


@pytest.mark.parametrize("group_fn", [None, "rank_normalise", "best_of_n_bonus"])
async def test_groups_spread_over_replicas_equal_in_process(
    replicas: list[RedisBackend], group_fn: Any
) -> None:
    config = GroupsConfig()
    fleet, counter = scorers(replicas, config)
    local = GroupScorer(config, cast(Any, LengthScorer()))
    groups = [[member(f"g{g}", i, group_fn=group_fn) for i in range(8)] for g in range(4)]
    posts = [(i % 3, m) for g in groups for i, m in enumerate(g)]
    random.Random(7).shuffle(posts)
    spread = await asyncio.gather(*(fleet[rep].submit(m, None, "test", FNS) for rep, m in posts))
    alone = await asyncio.gather(*(local.submit(m, cast(Any, None), "test", FNS) for _, m in posts))
    assert [essence(a) for a in spread] == [essence(a) for a in alone]
    assert all(a.status == "ok" for a in spread) and counter.calls == 32
    assert await replicas[0].store.client.zcard(replicas[0].store.key("groups", "open")) == 0  # all answered


async def test_repeated_member_on_another_replica_waits_and_runs_once(replicas: list[RedisBackend]) -> None:
    fleet, counter = scorers(replicas, GroupsConfig())
    joins = record_joins(fleet)
    posts = asyncio.gather(*(fleet[i % 3].submit(member("dup", i, size=3), None, "t", FNS) for i in range(2)))
    await eventually_async(lambda: len(joins) == 2)
    # member 0 again, on another replica
    repeat = asyncio.ensure_future(fleet[2].submit(member("dup", 0, size=3), None, "t", FNS))
    await eventually_async(lambda: len(joins) == 3)
    assert joins[2] == "dup" and not repeat.done()  # a repeat waits for the group's answer
    last = await fleet[1].submit(member("dup", 2, size=3), None, "t", FNS)
    a0, _a1 = await posts
    again = await repeat
    assert counter.calls == 3 and essence(again) == essence(a0) and last.status == "ok"
    late = await fleet[0].submit(
        member("dup", 0, size=3), None, "t", FNS
    )  # after the answer: the same answer
    assert essence(late) == essence(a0) and counter.calls == 3
    with pytest.raises(GroupRequestError, match="already answered"):
        await fleet[2].submit(
            member("dup", 1, size=3).model_copy(update={"group_index": None, "uid": "z"}), None, "t", FNS
        )


async def test_timeout_is_fleet_wide_and_matches_in_process(replicas: list[RedisBackend]) -> None:
    config = GroupsConfig(timeout_s=0.3)
    fleet, _ = scorers(replicas, config)
    local = GroupScorer(config, cast(Any, LengthScorer()))
    spread = await asyncio.gather(
        *(fleet[i].submit(member("late", i, size=3), None, "t", FNS) for i in range(2))
    )
    alone = await asyncio.gather(
        *(local.submit(member("late", i, size=3), cast(Any, None), "t", FNS) for i in range(2))
    )
    assert [a.status for a in spread] == ["group_timeout"] * 2
    assert [essence(a) for a in spread] == [essence(a) for a in alone]
    assert spread[0].extra["group"]["received"] == 2


async def test_open_groups_are_bounded_fleet_wide(replicas: list[RedisBackend]) -> None:
    fleet, _ = scorers(replicas, GroupsConfig(max_open_groups=1, timeout_s=0.3))
    joins = record_joins(fleet)
    pending = asyncio.create_task(fleet[0].submit(member("a", 0, size=2), None, "t", FNS))
    await eventually_async(lambda: joins == ["new"])  # group "a" is open
    with pytest.raises(TooManyOpenGroups):
        await fleet[1].submit(member("b", 0, size=2), None, "t", FNS)
    assert (await pending).status == "group_timeout"


async def test_mismatched_members_are_refused(replicas: list[RedisBackend]) -> None:
    fleet, _ = scorers(replicas, GroupsConfig(timeout_s=0.3))
    joins = record_joins(fleet)
    pending = asyncio.create_task(fleet[0].submit(member("m", 0, size=2), None, "t", FNS))
    await eventually_async(lambda: joins == ["new"])  # group "m" is open with size 2
    with pytest.raises(GroupRequestError, match="group_size 2"):
        await fleet[1].submit(member("m", 1, size=3), None, "t", FNS)
    with pytest.raises(GroupRequestError, match="different group functions"):
        await fleet[2].submit(member("m", 1, size=2, group_fn="rank_normalise"), None, "t", FNS)
    await pending


async def test_a_partial_group_is_judged_once_fleet_wide_as_in_process(replicas: list[RedisBackend]) -> None:
    config = GroupsConfig(timeout_s=0.3)
    fleet, counter = scorers(replicas, config)
    local = GroupScorer(config, cast(Any, LengthScorer()))
    present = [member("part", i, size=4, group_fn="rank_normalise") for i in (0, 1, 3)]
    spread = await asyncio.gather(*(fleet[i].submit(m, None, "t", FNS) for i, m in enumerate(present)))
    alone = await asyncio.gather(*(local.submit(m, cast(Any, None), "t", FNS) for m in present))
    assert [a.status for a in spread] == ["ok"] * 3 and counter.calls == 3
    assert [essence(a) for a in spread] == [essence(a) for a in alone]
    assert all(a.extra["group_partial"] and a.extra["members_missing"] == [2] for a in spread)
    named = SimpleNamespace(name="length")  # the late answer names the reward function, unscored
    late = await fleet[1].submit(member("part", 2, size=4, group_fn="rank_normalise"), named, "t", FNS)
    assert late.status == "group_timeout" and late.error is not None and "3 of 4" in late.error.message
    assert counter.calls == 3  # the late member is not scored
