"""TRL reward callables: how TRL's call (standard and conversational) becomes samples, and the None policy."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from bench.harness.processes import free_port
from rewardfleet.services.client import BadRequest, GatewayUnavailable, RetryPolicy
from rewardfleet.services.integrations.trl import SampleMapper, make_async_reward_func, make_reward_func
from tests.client.fake_gateway import FakeGateway, Reply, ok_reply

FAST = RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.02, max_attempts=3)


def judge(body: dict[str, Any], attempt: int) -> Reply:
    """1.0 if the solution equals the ground truth; 'boom' fails the function."""
    if body["solution_str"] == "boom":
        return Reply(
            body={
                "uid": body["uid"],
                "score": None,
                "status": "error",
                "extra": {},
                "error": {"type": "RuntimeError", "message": "boom"},
                "timings": {},
            }
        )
    reply = ok_reply(body, attempt)
    reply.body["score"] = float(body["solution_str"] == body["ground_truth"])
    return reply


@pytest.fixture
def gateway() -> Iterator[FakeGateway]:
    with FakeGateway(judge) as gw:
        yield gw


class TrainerState:  # what TRL passes as trainer_state: an object, not JSON
    global_step = 3


def test_standard_format_sync(gateway: FakeGateway, caplog: pytest.LogCaptureFixture) -> None:
    reward = make_reward_func(gateway.url, retry=FAST, name="fleet_math")
    assert reward.__name__ == "fleet_math" and not inspect.iscoroutinefunction(reward)
    # TRL: prompts/completions one per generation, dataset columns repeated per generation, plus trainer args
    with caplog.at_level(logging.WARNING):
        rewards = reward(
            prompts=["2+2=", "2+2=", "3+3="],
            completions=["4", "5", "boom"],
            completion_ids=[[19], [20], [21]],
            trainer_state=TrainerState(),
            ground_truth=["4", "4", "6"],
            data_source=["openai/gsm8k"] * 3,
            difficulty=[1, 1, 2],
            image=[object()] * 3,  # not JSON: left out
        )
    assert rewards == [1.0, 0.0, None]
    assert "returning None" in caplog.text and "boom" in caplog.text
    first = gateway.bodies[0]
    assert first["prompt"] == "2+2=" and first["solution_str"] == "4" and first["ground_truth"] == "4"
    assert first["data_source"] == "openai/gsm8k" and first["extra_info"] == {"difficulty": 1}


def test_conversational_format_async(gateway: FakeGateway) -> None:
    reward = make_async_reward_func(gateway.url, retry=FAST, data_source="fixed", reward_fn="exact")
    assert asyncio.iscoroutinefunction(reward) and reward.__name__ == "rewardfleet"
    prompts = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}]] * 2
    completions = [
        [{"role": "assistant", "content": "4"}],
        [{"role": "assistant", "content": [{"type": "text", "text": "5"}]}],
    ]

    async def trl_loop() -> list[float | None]:
        try:
            return await reward(
                prompts=prompts, completions=completions, solution=["4", "4"], extra_info=[{"k": 1}, {"k": 2}]
            )
        finally:
            await reward.aclose()  # type: ignore[attr-defined]

    rewards = asyncio.run(trl_loop())
    assert rewards == [1.0, 0.0]
    bodies = sorted(gateway.bodies, key=lambda b: b["solution_str"])
    assert bodies[0]["prompt"] == prompts[0] and bodies[0]["solution_str"] == "4"
    assert bodies[0]["ground_truth"] == "4"  # found in the `solution` column
    assert bodies[0]["data_source"] == "fixed" and bodies[0]["reward_fn"] == "exact"
    assert {b["extra_info"]["k"] for b in bodies} == {1, 2}


def test_unreachable_gateway_raises_or_gives_none_by_choice() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(GatewayUnavailable):
        make_reward_func(url, retry=FAST)(prompts=["p"], completions=["c"])
    tolerant = make_reward_func(url, retry=FAST, on_unavailable="none")
    assert tolerant(prompts=["p", "q"], completions=["c", "d"]) == [None, None]


def test_bad_request_is_a_configuration_error(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(
        status=404, body={"error": {"type": "unknown_reward_fn", "message": "no such function"}}
    )
    with pytest.raises(Exception) as info:
        make_reward_func(gateway.url, retry=FAST)(prompts=["p"], completions=["c"])
    assert not isinstance(info.value, BadRequest) and getattr(info.value, "status", None) == 404


def test_num_generations_makes_consecutive_completions_one_group() -> None:
    mapper = SampleMapper(num_generations=2, group_fn="pairwise_judge")
    first = mapper.samples(["p", "p", "q", "q"], ["a", "b", "c", "d"], {})
    ids = [s["group_id"] for s in first]
    assert ids[0] == ids[1] != ids[2] == ids[3]
    assert [s["group_index"] for s in first] == [0, 1, 0, 1]
    assert {s["group_size"] for s in first} == {2} and {s["group_fn"] for s in first} == {"pairwise_judge"}
    again = mapper.samples(["p", "p"], ["a", "b"], {})
    assert again[0]["group_id"] not in ids  # the next call (next step) is a new group, same prompt or not
    with pytest.raises(ValueError, match="num_generations=2"):
        mapper.samples(["p", "p", "q"], ["a", "b", "c"], {})
    with pytest.raises(ValueError, match="different prompts"):
        mapper.samples(["p", "q"], ["a", "b"], {})
