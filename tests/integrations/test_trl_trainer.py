"""TRL 1.16's own `GRPOTrainer` trains two steps on CPU with its rewards from the gateway.

What of TRL runs: `GRPOTrainer` with `GRPOConfig` (generation with the tiny policy, `_calculate_rewards`
calling the reward function with its dataset columns, the reward metrics it logs). The reward function is
`make_reward_func` from `services/integrations/trl.py`, scoring through a live gateway's `charsum` function;
TRL's logged `rewards/<name>/mean` must equal the same formula computed here on the completions TRL made.
A second reward function sends TRL's `num_generations` completions of a prompt as one group (group_fn
`rank_normalise`): its logged mean must be the group function's over exactly those completions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rewardfleet.reward_fns.groups.rank_normalise import compute_group_score
from rewardfleet.services.integrations.trl import make_reward_func
from tests.support.live_gateway import LiveGateway


def charsum(text: str) -> float:
    """The gateway's `charsum` function (tests/integrations/conftest.py), computed locally."""
    return sum(ord(c) for c in text) % 101 / 100


def test_grpo_trainer_logs_the_gateway_rewards(
    trainer_gateway: LiveGateway, tiny_policy: Path, tmp_path: Path
) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    dataset = Dataset.from_dict(
        {
            "prompt": ["What is 6*7?", "Name a colour.", "2+2=", "Say hi."],
            "ground_truth": ["42", "red", "4", "hi"],
        }
    )
    reward = make_reward_func(trainer_gateway.url, name="fleet", reward_fn="charsum")
    grouped = make_reward_func(
        trainer_gateway.url,
        name="fleet_group",
        reward_fn="charsum",
        num_generations=4,
        group_fn="rank_normalise",
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=12,
        max_steps=2,
        logging_steps=1,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        seed=0,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_policy),
        processing_class=AutoTokenizer.from_pretrained(tiny_policy),
        reward_funcs=[reward, grouped],
        args=args,
        train_dataset=dataset,
    )
    seen: list[tuple[float, list[float]]] = []
    grouped: list[tuple[float, list[float]]] = []

    class Recorder(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if logs and "rewards/fleet/mean" in logs:
                # TRL keeps the completions of the latest generation batch: the ones these rewards are for
                completions = list(trainer._logs["completion"])
                seen.append((logs["rewards/fleet/mean"], [charsum(c) for c in completions]))
                per_completion = list(trainer._logs["rewards"]["fleet_group"])
                grouped.append((logs["rewards/fleet_group/mean"], per_completion))

    trainer.add_callback(Recorder())
    trainer.train()
    assert len(seen) == 2, trainer.state.log_history
    for logged_mean, local in seen:
        assert len(local) == 4
        assert logged_mean == pytest.approx(sum(local) / len(local), abs=1e-6)
    for (grouped_mean, rewards), (_, local) in zip(grouped, seen, strict=True):
        # one prompt per generation batch here: its 4 completions are one group, ranked once together
        ranked = compute_group_score(samples=[{}] * 4, scores=list(local))
        assert rewards == pytest.approx(ranked, abs=1e-6)
        assert grouped_mean == pytest.approx(sum(rewards) / 4, abs=1e-6)
    # the formula really varies over what the random policy wrote (a constant would prove little)
    assert len({v for _, local in seen for v in local}) > 1
