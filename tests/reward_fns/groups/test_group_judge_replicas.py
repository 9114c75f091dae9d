"""`pairwise_judge` across three gateway replicas sharing a real redis-server behind a real round-robin
HAProxy: members spread over the replicas get the same exact answers as on one gateway, the group's judge
calls run once, and a retried member (through another replica) runs nothing again; a group with a member
that never arrives is judged once, at its deadline, over the members present."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from bench.harness.redis_server import RedisServer
from tests.gateway.state_store.fleet import Fleet
from tests.support.group_judges import Judge, group_functions, start_judge


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, Judge]]:
    tmp = tmp_path_factory.mktemp("group_judge_fleet")
    redis = RedisServer(tmp).start()
    judge = start_judge(tmp, "judge")
    config = {
        "routers": {"judge": judge.address},
        "functions": {"stamped": {"reward_kwargs": {"log_path": str(tmp / "runs.log")}}},
        "groups": {"timeout_s": 5.0, "functions": group_functions(pool_of_biased="judge")},
    }
    fleet = Fleet(tmp, redis, config)
    try:
        yield fleet.start(3), judge
    finally:
        fleet.stop()
        judge.proc.stop()
        redis.stop()


def _member(i: int, quality: int, size: int, group_id: str = "spread") -> dict[str, Any]:
    return {
        "data_source": "x",
        "reward_fn": "stamped",
        "solution_str": f"quality={quality}",
        "ground_truth": "",
        "prompt": "Pick the best.",
        "uid": f"m{i}",
        "group_id": group_id,
        "group_size": size,
        "group_fn": "pairwise_judge",
    }


def test_a_group_spread_over_three_replicas_is_judged_once_exactly(
    replicated: tuple[Fleet, Judge],
) -> None:
    fleet, judge = replicated
    qualities = [4, 1, 6, 3, 5, 2]
    posts = [_member(i, q, len(qualities)) for i, q in enumerate(qualities)]
    with ThreadPoolExecutor(len(posts)) as ex:
        answers = [
            r.json() for r in ex.map(lambda b: httpx.post(f"{fleet.url}/score", json=b, timeout=60), posts)
        ]
    assert [a["status"] for a in answers] == ["ok"] * 6, answers
    # win rate over the 5 others: quality q beats the q-1 lower ones
    assert [a["score"] for a in answers] == pytest.approx([(q - 1) / 5 for q in qualities])
    assert len(judge.log()) == 30  # 15 pairs, both orders: once for the whole fleet
    again = [httpx.post(f"{fleet.url}/score", json=posts[0], timeout=60).json() for _ in range(3)]
    assert {a["score"] for a in again} == {answers[0]["score"]}  # every replica has the answer
    assert len(judge.log()) == 30


def test_a_member_that_never_arrives_leaves_a_partial_group_judged_once(
    replicated: tuple[Fleet, Judge],
) -> None:
    fleet, judge = replicated
    before = len(judge.log())
    qualities = [3, 1, 2]  # a group of 4: member m3 never arrives
    posts = [_member(i, q, 4, group_id="partial") for i, q in enumerate(qualities)]
    with ThreadPoolExecutor(len(posts)) as ex:
        answers = [
            r.json() for r in ex.map(lambda b: httpx.post(f"{fleet.url}/score", json=b, timeout=60), posts)
        ]
    assert [a["status"] for a in answers] == ["ok"] * 3, answers
    assert [a["score"] for a in answers] == pytest.approx([1.0, 0.0, 0.5])  # win rate among the three
    for a in answers:
        extra = a["extra"]
        assert (extra["group_partial"], extra["members_present"], extra["members_expected"]) == (True, 3, 4)
        assert extra["members_missing"] is None  # members posted by uid cannot be named
    assert len(judge.log()) - before == 6  # 3 pairs, both orders: once for the whole fleet
    late = [httpx.post(f"{fleet.url}/score", json=_member(3, 4, 4, "partial"), timeout=60) for _ in range(3)]
    assert [r.status_code for r in late] == [200] * 3  # through each replica of the round robin
    assert {r.json()["status"] for r in late} == {"group_timeout"}
    assert {r.json()["error"]["type"] for r in late} == {"GroupTimeout"}
    assert "3 of 4 members" in late[0].json()["error"]["message"]
    assert len(judge.log()) - before == 6
