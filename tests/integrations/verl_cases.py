"""(Run by test_verl_trainer_code.py in its own interpreter: see there why.)

verl 0.9.1's own code scores through `services/integrations/verl_reward.py` and a live gateway.

What of verl runs: its trainer Hydra config (`verl/trainer/config/ppo_trainer.yaml`) composed with the
override lines of docs/client.md; `verl.trainer.ppo.reward.get_custom_reward_fn` loading the adapter from
`pkg://`; its dataset (`RLHFDataset`, `collate_fn`) building the `DataProto`; the reward loop its trainer uses
(`RewardLoopManager` → Ray actors `RewardLoopWorker` → `NaiveRewardManager.run_single`) and the older
`verl.workers.reward_manager.NaiveRewardManager`; the expected scores come from verl's own
`default_compute_score`.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.harness.processes import REPO_ROOT
from tests.integrations.verl_harness import (
    compose_trainer_config,
    documented_overrides,
    last_token_scores,
    rollout_batch,
    write_parquet,
)
from tests.support.live_gateway import LiveGateway

GSM8K_SUFFIX = ' Let\'s think step by step and output the final answer after "####".'
# (data_source, question, ground truth, response): gsm8k rows first, math_dapo rows last, so each of the two
# reward-loop workers gets one data source only. With per-process key memory the two workers returned
# different key sets and verl dropped `acc` (or, math_dapo first, died with KeyError: 'acc').
ROWS = [
    ("openai/gsm8k", "What is 6*7?", "42", "6*7 is 42.\n#### 42"),
    ("openai/gsm8k", "What is 5+5?", "10", "5+5 is 11.\n#### 11"),
    ("math_dapo", "What is 2+3?", "5", "2+3=5.\nAnswer: 5"),
    ("math_dapo", "What is 9-4?", "5", "9-4=6.\nAnswer: 6"),
]


def _row(i: int, data_source: str, question: str, truth: str) -> dict[str, Any]:
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": question + GSM8K_SUFFIX}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"index": i, "question": question, "split": "train"},
    }


@pytest.fixture(scope="module")
def tokenizer(tiny_policy: Path) -> Any:
    from verl.utils import hf_tokenizer

    return hf_tokenizer(str(tiny_policy))


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Any:
    tmp = tmp_path_factory.mktemp("verl-data")
    parquet = write_parquet(tmp / "train.parquet", [_row(i, *r[:3]) for i, r in enumerate(ROWS)])
    return rollout_batch(parquet, tokenizer, [r[3] for r in ROWS], tmp / "cache")


def trainer_config(gateway: LiveGateway, tiny_policy: Path, *extra: str) -> Any:
    return compose_trainer_config(
        [
            *documented_overrides(gateway.url),
            f"actor_rollout_ref.model.path={tiny_policy}",
            "reward.num_workers=2",
            *extra,
        ]
    )


def verl_expected(batch: Any, tokenizer: Any) -> list[dict[str, Any]]:
    """What verl computes on its own for each row: `default_compute_score` on the decoded response, with
    the reward manager's rule that a number result is also stored as `acc`."""
    from verl.utils.reward_score import default_compute_score

    expected = []
    response_len = batch.batch["responses"].shape[-1]
    for i in range(len(batch)):
        valid = int(batch.batch["attention_mask"][i, -response_len:].sum())
        text = tokenizer.decode(batch.batch["responses"][i, :valid], skip_special_tokens=True)
        result = default_compute_score(
            batch.non_tensor_batch["data_source"][i],
            text,
            batch.non_tensor_batch["reward_model"][i]["ground_truth"],
        )
        expected.append(dict(result) if isinstance(result, dict) else {"score": result, "acc": result})
    return expected


def test_documented_lines_are_what_verl_trainer_reads(
    trainer_gateway: LiveGateway, tiny_policy: Path
) -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from rewardfleet.services.integrations import verl_reward

    config = trainer_config(trainer_gateway, tiny_policy)
    fn = get_custom_reward_fn(config)
    assert fn is not None, "verl's trainer found no custom reward function in the documented config"
    assert fn.args[0] is verl_reward.compute_score  # pkg:// imported the package module itself
    assert fn.args[1] == {"gateway_url": trainer_gateway.url}
    # The old top-level form composes without an error, and verl's trainer does not read it: the trap the
    # docs warn about (main_ppo would score everything locally and never call the gateway).
    old_form = compose_trainer_config(
        [
            "custom_reward_function.path=pkg://rewardfleet.services.integrations.verl_reward",
            "custom_reward_function.name=compute_score",
        ]
    )
    assert get_custom_reward_fn(old_form) is None


def test_older_naive_reward_manager(
    trainer_gateway: LiveGateway, tiny_policy: Path, tokenizer: Any, batch: Any
) -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.naive import NaiveRewardManager

    config = trainer_config(
        trainer_gateway, tiny_policy, "reward.custom_reward_function.name=compute_score_sync"
    )
    manager = NaiveRewardManager(tokenizer, num_examine=0, compute_score=get_custom_reward_fn(config))
    out = manager(batch, return_dict=True)
    expected = verl_expected(batch, tokenizer)
    response_len = batch.batch["responses"].shape[-1]
    scores = last_token_scores(out["reward_tensor"], batch.batch["attention_mask"], response_len)
    assert scores == [e["score"] for e in expected]
    assert scores == [1.0, 0.0, 1.0, -1.0]  # the rows really are right, wrong, right, wrong
    extra = out["reward_extra_info"]
    assert [float(a) for a in extra["acc"]] == [float(e["acc"]) for e in expected]


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    """A local Ray with 2 CPUs (one per reward-loop worker), shut down after this module."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths must stay under 108 bytes
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    try:
        yield
    finally:
        ray.shutdown()


def test_reward_loop_workers_in_ray_mixed_data_sources(
    trainer_gateway: LiveGateway, tiny_policy: Path, tokenizer: Any, batch: Any, ray_local: None
) -> None:
    """verl's trainer path: RewardLoopManager splits the batch over 2 Ray actors (gsm8k rows in one, math_dapo
    rows in the other), each loads the adapter with get_custom_reward_fn and scores through the gateway."""
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(trainer_config(trainer_gateway, tiny_policy))
    out = manager.compute_rm_score(batch)  # a KeyError here = key sets differ between workers
    expected = verl_expected(batch, tokenizer)
    response_len = batch.batch["responses"].shape[-1]
    scores = last_token_scores(out.batch["rm_scores"], batch.batch["attention_mask"], response_len)
    assert scores == [e["score"] for e in expected] == [1.0, 0.0, 1.0, -1.0]
    columns = out.non_tensor_batch
    # verl's validation metric key survives, with verl's own values for both kinds of scorer
    assert [float(a) for a in columns["acc"]] == [float(e["acc"]) for e in expected]
    assert list(columns["pred"][2:]) == [e["pred"] for e in expected[2:]]
    assert list(columns["reward_status"]) == ["ok"] * 4 and not any(columns["reward_failed"])
    assert json.loads(columns["reward_extra"][2])["pred"] == expected[2]["pred"]
    assert all(not math.isnan(float(a)) for a in columns["acc"])


def group_overrides(gateway_url: str) -> list[str]:
    """The verl override lines of docs/group_judging.md's `### verl` bash block, pointed at the test gateway,
    with the test's group function (rank_normalise needs no judge pool) and a scorer that varies."""
    text = (REPO_ROOT / "docs" / "group_judging.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text[text.index("### verl\n") :], re.S)
    if block is None:
        raise AssertionError("docs/group_judging.md's verl section has no bash block")
    lines = [line.strip().rstrip("\\").strip() for line in block.group(1).splitlines()]
    lines = [line for line in lines if "=" in line and not line.startswith("python")]
    lines = [re.sub(r"gateway_url=\S+", f"gateway_url={gateway_url}", line) for line in lines]
    lines = [re.sub(r"group_fn=\S+", "group_fn=rank_normalise", line) for line in lines]
    return [
        *[re.sub(r"rollout.n=\S+", "rollout.n=3", line) for line in lines],
        "+reward.custom_reward_function.reward_kwargs.reward_fn=charsum",
    ]


def test_group_reward_manager_sends_each_prompts_rollouts_as_one_group(
    trainer_gateway: LiveGateway, tiny_policy: Path, tokenizer: Any, tmp_path: Path
) -> None:
    """With docs/group_judging.md's override lines, verl's reward-manager loading
    (`resolve_reward_manager_cls`, importlib source) finds the adapter's manager; its `run_single` (verl's
    NaiveRewardManager) scores two prompts' 3 rollouts each, every rollout carrying verl's `uid` of its
    prompt: each prompt is one group, judged once, every member answered."""
    import asyncio

    import numpy as np
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    from rewardfleet.services.integrations import verl_reward
    from rewardfleet.services.integrations.verl_group import GroupRewardManager

    config = compose_trainer_config(
        [*group_overrides(trainer_gateway.url), f"actor_rollout_ref.model.path={tiny_policy}"]
    )
    assert resolve_reward_manager_cls(config) is GroupRewardManager
    rows = [_row(0, "openai/gsm8k", "What is 6*7?", "42")] * 3 + [_row(1, "openai/gsm8k", "1+1?", "2")] * 3
    responses = ["#### 42", "#### 41", "It is 42.\n#### 42", "#### 2", "#### 3", "#### 5"]
    parquet = write_parquet(tmp_path / "group.parquet", rows)
    batch = rollout_batch(parquet, tokenizer, responses, tmp_path / "cache")
    uids = ["prompt-a-step7"] * 3 + ["prompt-b-step7"] * 3  # as verl's trainer: one uid per prompt, repeated
    batch.non_tensor_batch["uid"] = np.array(uids, dtype=object)
    # a tool's fields (merged into extra_info by verl after the manager's) cannot re-name a rollout's group
    forged = {"rewardfleet_group": {"group_id": "forged", "group_size": 3}, "tool_calls": 1}
    batch.non_tensor_batch["tool_extra_fields"] = np.array([{}] * 3 + [forged] * 3, dtype=object)

    async def score_all() -> list[dict[str, Any]]:
        manager = GroupRewardManager(config, tokenizer, get_custom_reward_fn(config))
        try:
            return list(await asyncio.gather(*(manager.run_single(batch[i : i + 1]) for i in range(6))))
        finally:
            await verl_reward.aclose()

    outs = asyncio.run(score_all())
    extras = [json.loads(o["reward_extra_info"]["reward_extra"]) for o in outs]
    assert [o["reward_extra_info"]["reward_status"] for o in outs] == ["ok"] * 6
    assert [e["group"]["id"] for e in extras] == uids
    assert all(e["group"]["size"] == 3 and e["group"]["received"] == 3 for e in extras)
    assert all(e["group"]["fn"] == "rank_normalise" and not e["group_partial"] for e in extras)
    # charsum.py scores each rollout; rank_normalise ranks them within their own prompt's group only
    from rewardfleet.reward_fns.groups.rank_normalise import compute_group_score

    per_sample = [e["sample_score"] for e in extras]
    expected = [
        *compute_group_score(samples=[{}] * 3, scores=per_sample[:3]),
        *compute_group_score(samples=[{}] * 3, scores=per_sample[3:]),
    ]
    assert [o["reward_score"] for o in outs] == expected
    assert (
        sorted(expected[:3]) == sorted(expected[3:]) == [0.0, 0.5, 1.0]
    )  # two groups of three, not one of 6
    assert "rewardfleet_group" not in extras[0]  # the group travels as fields, not as extra_info
    assert (
        batch.non_tensor_batch["extra_info"][0].get("rewardfleet_group") is None
    )  # caller's batch untouched


def test_agent_loop_multi_turn_sample(
    trainer_gateway: LiveGateway, tiny_policy: Path, tokenizer: Any
) -> None:
    """(issue 26) A multi-turn tool sample exactly as verl's agent loop hands it to its reward loop
    (`AgentLoopWorker._compute_score` in verl/experimental/agent_loop/agent_loop.py builds this DataProto:
    the dataset row's fields, `__num_turns__`, `tool_extra_fields`), scored by the reward loop's own
    `NaiveRewardManager.run_single` with the adapter as its custom function."""
    import asyncio

    import numpy as np
    import torch
    from tensordict import TensorDict
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = trainer_config(
        trainer_gateway, tiny_policy, "+reward.custom_reward_function.reward_kwargs.reward_fn=multi_turn"
    )
    prompt_ids = tokenizer("What is 6 * 12?", add_special_tokens=False)["input_ids"]
    response = (
        "Let me check with the tool.\ncalc_gsm8k_reward(answer=72)\n"
        "Current parsed answer=72 reward=1.0\nThe tool agrees.\n#### 72"
    )
    response_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    input_ids = torch.tensor([prompt_ids + response_ids])
    batch = TensorDict(
        {
            "prompts": torch.tensor([prompt_ids]),
            "responses": torch.tensor([response_ids]),
            "attention_mask": torch.ones_like(input_ids),
            "input_ids": input_ids,
            "position_ids": torch.arange(input_ids.shape[1]).unsqueeze(0),
        },
        batch_size=1,
    )
    row = {
        "data_source": "openai/gsm8k",
        "reward_model": {"style": "rule", "ground_truth": "72"},
        "extra_info": {"index": 0, "split": "train", "need_tools_kwargs": True},
        "tools_kwargs": {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": "72"}}},
        "agent_name": "tool_agent",
        "index": 0,
    }
    extra_fields = {"turn_scores": [], "tool_rewards": [0.0, 1.0]}  # ToolAgentLoop's, after two tool calls
    non_tensor_batch = {
        **{k: np.array([v]) for k, v in row.items()},
        "__num_turns__": np.array([5]),
        "tool_extra_fields": np.array([extra_fields], dtype=object),
        "prompt_len": np.array([len(prompt_ids)]),
        "response_len": np.array([len(response_ids)]),
    }
    data = DataProto(batch=batch, non_tensor_batch=non_tensor_batch)

    async def score() -> dict[str, Any]:
        from rewardfleet.services.integrations import verl_reward

        manager = NaiveRewardManager(config, tokenizer, compute_score=get_custom_reward_fn(config))
        try:
            return await manager.run_single(data)
        finally:
            await verl_reward.aclose()

    out = asyncio.run(score())
    info = out["reward_extra_info"]
    assert out["reward_score"] == 1.0 and info["reward_status"] == "ok"
    assert json.loads(info["turn_scores"]) == [0.0, 1.0] and json.loads(info["step_scores"]) is None
    seen = json.loads(info["reward_extra"])
    assert seen["num_turns"] == 5
    assert {"num_turns", "rollout_reward_scores", "tool_rewards", "turn_scores"} <= set(
        seen["extra_info_keys"]
    )
