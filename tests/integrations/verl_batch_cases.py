"""The batched verl modes against a live gateway, called by verl 0.9.1's own reward code: the reward loop's
`RewardLoopWorker` (verl's trainer path) and the `BatchRewardManager` (`reward_manager=batch`).

Run by tests/integrations/test_verl_batch.py in an interpreter with verl's antlr4 4.9 first on the path (see
test_verl_trainer_code.py for why); not collected by itself."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from bench.harness.tiny_models import build_tiny_qwen2
from rewardfleet.services.client import AsyncRewardClient, GatewayHTTPError
from rewardfleet.services.integrations import verl_batch
from rewardfleet.services.integrations.verl_reward import RewardFunctionFailed
from tests.support.live_gateway import LiveGateway

ANSWERS = ["7", "8", "9", "10", "11", "12"]
TRUTHS = ["7", "0", "9", "0", "11", "0"]  # samples 0, 2, 4 are right
PROMPT = 4


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 checkpoint: verl's workers load the policy tokenizer from it."""
    return build_tiny_qwen2(tmp_path_factory.mktemp("policy"), kind="causal")


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The size of every `/score/batch` request the client sends (the real method still runs)."""
    sizes: list[int] = []
    real = AsyncRewardClient.score_batch

    async def counting(self: AsyncRewardClient, samples: Any, **kwargs: Any) -> Any:
        samples = list(samples)
        sizes.append(len(samples))
        return await real(self, samples, **kwargs)

    monkeypatch.setattr(AsyncRewardClient, "score_batch", counting)
    yield sizes


def data_proto(tokenizer: Any) -> Any:
    """A step's batch as verl's rollout leaves it: left-padded prompts, right-padded responses."""
    from verl import DataProto

    ids = [tokenizer.encode(answer) for answer in ANSWERS]
    width = max(len(x) for x in ids) + 2
    responses = torch.full((len(ids), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(ids), PROMPT + width), dtype=torch.long)
    mask[:, :PROMPT] = 1
    for i, row in enumerate(ids):
        responses[i, : len(row)] = torch.tensor(row)
        mask[i, PROMPT : PROMPT + len(row)] = 1
    prompts = torch.full((len(ids), PROMPT), tokenizer.eos_token_id, dtype=torch.long)
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["unit"] * len(ids), dtype=object),
            "reward_model": np.array([{"ground_truth": t} for t in TRUTHS], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(ids))], dtype=object),
        },
    )


def reward_loop_config(policy: Path, gateway_url: str) -> Any:
    """verl's own reward.yaml, pointed at the batched function the way a user's config does."""
    import verl
    from omegaconf import OmegaConf

    reward = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "reward" / "reward.yaml")
    config = OmegaConf.create(
        {"actor_rollout_ref": {"model": {"path": str(policy), "tokenizer_path": None}}, "reward": reward}
    )
    config.reward.custom_reward_function.path = "pkg://rewardfleet.services.integrations.verl_batch"
    config.reward.custom_reward_function.name = "compute_score"
    config.reward.custom_reward_function.reward_kwargs = {"gateway_url": gateway_url, "batch_window_ms": 200}
    return config


def test_verl_reward_loop_sends_a_step_as_one_batch(
    live_gateway: LiveGateway, policy_dir: Path, batches: list[int]
) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.utils import hf_tokenizer

    data = data_proto(hf_tokenizer(str(policy_dir)))

    async def step() -> list[dict[str, Any]]:
        worker = RewardLoopWorker(reward_loop_config(policy_dir, live_gateway.url))
        try:
            return list(await worker.compute_score_batch(data))
        finally:
            await verl_batch.aclose()

    outputs = asyncio.run(step())
    assert [out["reward_score"] for out in outputs] == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert [out["reward_extra_info"]["pred"] for out in outputs] == ANSWERS
    assert all(out["reward_extra_info"]["reward_status"] == "ok" for out in outputs)
    assert batches == [len(ANSWERS)]  # six concurrent calls, one POST /score/batch


def test_verl_batch_reward_manager(live_gateway: LiveGateway, policy_dir: Path, batches: list[int]) -> None:
    from verl.utils import hf_tokenizer
    from verl.workers.reward_manager import BatchRewardManager

    tokenizer = hf_tokenizer(str(policy_dir))
    manager = BatchRewardManager(
        tokenizer, num_examine=0, compute_score=verl_batch.compute_score_batch, gateway_url=live_gateway.url
    )
    data = data_proto(tokenizer)
    out = manager(data, return_dict=True)
    lengths = data.batch["attention_mask"][:, PROMPT:].sum(dim=-1)
    rewards = [float(out["reward_tensor"][i, int(n) - 1]) for i, n in enumerate(lengths)]
    assert rewards == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert float(out["reward_tensor"].sum()) == 3.0  # nothing but the last valid token carries a reward
    assert out["reward_extra_info"]["pred"] == ANSWERS
    assert out["reward_extra_info"]["reward_failed"] == [0.0] * len(ANSWERS)


async def test_failures_per_sample_and_per_batch(live_gateway: LiveGateway, batches: list[int]) -> None:
    kw: dict[str, Any] = {"gateway_url": live_gateway.url, "batch_window_ms": 200}
    try:
        ok, failed, fallback = await asyncio.gather(
            verl_batch.compute_score("unit", "5", "5", {}, **kw),
            verl_batch.compute_score("unit", "x", "5", {}, reward_fn="boom", **kw),
            verl_batch.compute_score("unit", "x", "5", {}, reward_fn="boom", error_score=-1.0, **kw),
            return_exceptions=True,
        )
        assert isinstance(ok, dict) and ok["score"] == 1.0
        # the failing sample fails alone, as a typed error naming the function's exception
        assert isinstance(failed, RewardFunctionFailed) and "ValueError: boom: x" in str(failed)
        assert isinstance(fallback, dict) and fallback["score"] == -1.0 and fallback["reward_failed"] == 1.0
        assert math.isnan(fallback["acc"])  # a failed sample's acc is NaN, never a silent 0
        assert batches == [3]
        # a batch the gateway refuses whole (unknown function: 404) fails every call in it
        refused = await asyncio.gather(
            verl_batch.compute_score("unit", "5", "5", {}, reward_fn="nope", **kw),
            verl_batch.compute_score("unit", "6", "6", {}, reward_fn="nope", **kw),
            return_exceptions=True,
        )
        assert all(isinstance(r, GatewayHTTPError) and r.status == 404 for r in refused)
    finally:
        await verl_batch.aclose()


async def test_max_batch_size_splits_and_settings_are_checked(
    live_gateway: LiveGateway, batches: list[int]
) -> None:
    kw: dict[str, Any] = {"gateway_url": live_gateway.url, "batch_window_ms": 200, "max_batch_size": 4}
    try:
        results = await asyncio.gather(
            *(verl_batch.compute_score("unit", str(i), str(i % 2), {}, **kw) for i in range(10))
        )
        assert [r["score"] for r in results] == [1.0 if i in (0, 1) else 0.0 for i in range(10)]
        assert batches == [4, 4, 2]
        with pytest.raises(ValueError, match="max_batch_size"):
            await verl_batch.compute_score(
                "unit", "1", "1", {}, gateway_url=live_gateway.url, max_batch_size=0
            )
    finally:
        await verl_batch.aclose()


def test_batch_lists_must_align(live_gateway: LiveGateway) -> None:
    with pytest.raises(ValueError, match="differ in length"):
        verl_batch.compute_score_batch(["a", "b"], ["1"], ["1"], None, gateway_url=live_gateway.url)
