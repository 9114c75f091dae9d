"""Reward components to verl 0.9.1's GDPO advantage: the adapter's `component_keys` columns, stacked as verl's
reward loop stacks reward extra info, are what verl's own `compute_gdpo_outcome_advantage` reads. Run by
test_verl_gdpo.py in an interpreter with verl's antlr4 4.9 first on the path (test_verl_trainer_code.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from verl.trainer.ppo.core_algos import compute_gdpo_outcome_advantage

from rewardfleet.services.client import ScoreResult
from rewardfleet.services.integrations.verl_reward import RewardFunctionFailed, to_verl, with_components

KEYS = ["accuracy", "format"]


def result(uid: str, components: dict[str, float] | None) -> ScoreResult:
    score = sum((components or {}).values())
    body = {"uid": uid, "score": score, "status": "ok", "reward_components": components}
    return ScoreResult.from_json(body, uid=uid)


def columns(results: list[ScoreResult], **kwargs: Any) -> dict[str, np.ndarray]:
    rows = [with_components(to_verl(r), r, KEYS, **kwargs) for r in results]
    return {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]}


def test_gdpo_reads_each_component_column() -> None:
    parts = [{"accuracy": 1.0, "format": 1.0}, {"accuracy": 0.0, "format": 1.0},
             {"accuracy": 1.0, "format": 0.0}, {"accuracy": 0.0, "format": 0.0}]  # fmt: skip
    batch_columns = columns([result(f"s{i}", p) for i, p in enumerate(parts)])
    assert list(batch_columns["accuracy"]) == [1.0, 0.0, 1.0, 0.0]
    n, prompt_len, response_len = 4, 2, 3
    batch = {
        "prompts": torch.zeros(n, prompt_len, dtype=torch.long),
        "attention_mask": torch.ones(n, prompt_len + response_len, dtype=torch.long),
    }
    mask = torch.ones(n, response_len)
    config = {"gdpo_reward_keys": KEYS}
    advantages, _ = compute_gdpo_outcome_advantage(
        token_level_rewards=torch.zeros(n, response_len),
        response_mask=mask,
        index=np.array(["g"] * n, dtype=object),
        config=config,
        non_tensor_batch=batch_columns,
        batch=batch,
    )
    per_sample = advantages[:, 0].tolist()
    # both components right > one right (equal weights, symmetric) > none right
    assert per_sample[0] > per_sample[1] and per_sample[0] > per_sample[2] and per_sample[3] < per_sample[1]
    assert per_sample[1] == pytest.approx(per_sample[2], abs=1e-5)


def test_a_missing_component_is_not_a_number() -> None:
    with pytest.raises(RewardFunctionFailed, match="no reward component 'format'"):
        columns([result("s0", {"accuracy": 1.0})])
    assert columns([result("s0", {"accuracy": 1.0})], missing_score=0.0)["format"][0] == 0.0
    with pytest.raises(ValueError, match="adapter's own keys"):
        with_components({}, result("s0", {"score": 1.0}), ["score"])
