"""slime's groups through the gateway: `group_rm` (slime's `--group-rm --custom-rm-path` contract) posts a
prompt group as one group, and `/slime` takes group fields from a custom per-sample reward function.

slime itself cannot be installed here (it needs Megatron and SGLang on GPUs); `Sample` below has the fields of
slime's `slime.utils.types.Sample` that a reward function reads and writes (group_index, index, prompt,
response, label, metadata, remove_sample), with slime's defaults."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from rewardfleet.reward_fns.groups.rank_normalise import compute_group_score
from rewardfleet.services.integrations import slime
from tests.support.live_gateway import LiveGateway


@dataclass
class Sample:
    group_index: int | None = None
    index: int | None = None
    prompt: str | list[dict[str, str]] = ""
    response: str = ""
    label: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    remove_sample: bool = False


def charsum(text: str) -> float:
    return sum(ord(c) for c in text) % 101 / 100


def _group(group_index: int, responses: list[str], **meta: Any) -> list[Sample]:
    return [
        Sample(
            group_index, group_index * 10 + i, "Say a word.", r, "x", {"group_fn": "rank_normalise", **meta}
        )
        for i, r in enumerate(responses)
    ]


async def _score(args: Any, groups: list[list[Sample]]) -> list[list[float]]:
    try:
        return list(await asyncio.gather(*(slime.group_rm(args, g) for g in groups)))
    finally:
        await slime._clients.aclose()


def test_group_rm_scores_each_prompt_group_once_with_its_group_function(
    trainer_gateway: LiveGateway,
) -> None:
    args = SimpleNamespace(rm_url=trainer_gateway.url)
    groups = [
        _group(7, ["apple", "kiwi", "fig"], reward_fn="charsum"),
        _group(8, ["a", "bb"], reward_fn="charsum"),
    ]
    rewards = asyncio.run(_score(args, groups))
    for group, got in zip(groups, rewards, strict=True):
        local = [charsum(s.response) for s in group]
        assert got == pytest.approx(compute_group_score(samples=[{}] * len(group), scores=local))
        assert not any(s.remove_sample for s in group)
    assert sorted(rewards[0]) == [0.0, 0.5, 1.0]  # ranked within its own group of 3


def test_group_rm_removes_the_samples_it_could_not_score(trainer_gateway: LiveGateway) -> None:
    group = _group(9, ["one", "two"], reward_fn="boom")
    rewards = asyncio.run(_score(SimpleNamespace(rm_url=trainer_gateway.url), [group]))
    assert rewards == [[0.0, 0.0]] and all(s.remove_sample for s in group)


def test_group_rm_refuses_samples_of_different_groups() -> None:
    with pytest.raises(ValueError, match="--group-rm"):
        slime.group_bodies([*_group(1, ["a"]), *_group(2, ["b"])])


def test_slime_route_takes_group_fields_from_a_custom_reward_function(trainer_gateway: LiveGateway) -> None:
    posts = [
        {"prompt": "Say a word.", "response": r, "label": "x", "group_id": "slime-route-1", "group_size": 3,
         "group_index": i, "group_fn": "rank_normalise"}
        for i, r in enumerate(["apple", "kiwi", "fig"])
    ]  # fmt: skip
    with ThreadPoolExecutor(3) as ex:
        answers = list(
            ex.map(lambda b: httpx.post(f"{trainer_gateway.url}/slime/charsum", json=b, timeout=60), posts)
        )
    assert [a.status_code for a in answers] == [200] * 3
    bodies = [a.json() for a in answers]
    expected = compute_group_score(samples=[{}] * 3, scores=[charsum(p["response"]) for p in posts])
    assert [b["score"] for b in bodies] == pytest.approx(expected)
    assert all(b["extra"]["group"]["received"] == 3 for b in bodies)
