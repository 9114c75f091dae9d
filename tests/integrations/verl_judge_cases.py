"""The judges' declared keywords under verl 0.9.1's own loader: `get_custom_reward_fn` reads
`reward.custom_reward_function.{path,name,reward_kwargs}` from an OmegaConf config (nested groups arrive as
DictConfig, lists as ListConfig) and calls the function as its reward managers do, by keyword. No judge
server: the answers here are settled before a call (a guard, a wrong answer, a skipped split).

Run by tests/integrations/test_verl_judge_keywords.py in an interpreter with verl's antlr4 4.9 first on the
path (see test_verl_trainer_code.py for why); not collected by itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn

from rewardfleet.reward_fns import judge, rule_then_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError


def verl_fn(path: str, reward_kwargs: dict[str, Any]) -> Callable[..., Any]:
    config = {
        "custom_reward_function": {"path": path, "name": "compute_score", "reward_kwargs": reward_kwargs}
    }
    fn = get_custom_reward_fn(OmegaConf.create({"reward": config}))
    assert fn is not None
    return fn


async def call(fn: Callable[..., Any], solution_str: str, extra_info: dict[str, Any]) -> dict[str, Any]:
    """As verl's naive reward manager calls an async function when a reward model is configured."""
    return await fn(
        data_source="math_dapo",
        solution_str=solution_str,
        ground_truth="42",
        extra_info=extra_info,
        reward_router_address="127.0.0.1:1",
        reward_model_tokenizer=None,
    )


async def test_judge_settings_from_verls_config() -> None:
    kwargs = {"pool": "mine", "timeout_s": 30, "generation": {"max_tokens": 64}, "guards": {"score": 0.25}}
    result = await call(verl_fn(judge.__file__, kwargs), "", {})
    assert (result["score"], result["guard"], result["judge_pool"]) == (0.25, "empty", "mine")


async def test_rule_then_judge_settings_from_verls_config() -> None:
    kwargs = {"skip_judge_splits": ["val"], "flaw_penalty": 0.5, "guards": {"max_answer_chars": 16}}
    fn = verl_fn(rule_then_judge.__file__, kwargs)
    wrong = await call(fn, "Answer: 41", {})
    assert (wrong["score"], wrong["judge_called"]) == (-1.0, False)
    skipped = await call(fn, "x" * 64 + "\nAnswer: 42", {"split": "val"})
    assert (skipped["score"], skipped["guard"]) == (1.0, "")
    guarded = await call(fn, "x" * 64 + "\nAnswer: 42", {"split": "train"})
    assert (guarded["score"], guarded["guard"], guarded["is_flawed"]) == (0.5, "too_long", True)


async def test_a_misspelt_or_mistyped_kwarg_in_verls_config_is_named() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeot_s'"):
        await call(verl_fn(judge.__file__, {"timeot_s": 30}), "42", {})
    with pytest.raises(JudgeConfigError, match=r"^skip_judge_splits: 'val' is not a valid value"):
        await call(verl_fn(rule_then_judge.__file__, {"skip_judge_splits": "val"}), "Answer: 42", {})
