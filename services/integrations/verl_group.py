"""verl's reward loop with GRPO groups: a reward manager that tells the gateway which rollouts form a group.

verl calls a reward function once per rollout with `data_source, solution_str, ground_truth, extra_info`:
nothing in those says which rollouts answer the same prompt. verl's trainer knows: before it repeats a prompt
`rollout.n` times it gives the prompt a fresh `uid` (uuid4, per step), which every rollout of it keeps in
`non_tensor_batch["uid"]` (GRPO's advantage groups by it). This manager, a subclass of verl 0.9.1's own
reward-loop `NaiveRewardManager`, puts that `uid` and the group size into the sample's `extra_info` under
`GROUP_KEY`; the adapter's `compute_score` (verl_reward.py / verl_batch.py) turns them into the gateway's
`group_id` / `group_size` and sends `group_fn` from `reward_kwargs`:

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://rewardfleet.services.integrations.verl_group
    reward.reward_manager.name=GroupRewardManager
    reward.custom_reward_function.path=pkg://rewardfleet.services.integrations.verl_reward
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.gateway_url=http://reward-gateway:8000
    +reward.custom_reward_function.reward_kwargs.group_fn=pairwise_judge

Group size: `actor_rollout_ref.rollout.n`; a batch flagged `validate` in its meta_info uses
`rollout.val_kwargs.n`. A group id is `uid`, so it is new every step: a prompt seen again in a later epoch is
a new group. Members are told apart by the client's per-sample `uid` (kept across the client's retries).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

from rewardfleet.services.integrations._common import GROUP_KEY


class GroupRewardManager(NaiveRewardManager):
    """verl's `NaiveRewardManager`, each sample's extra_info carrying its GRPO group (see the module)."""

    def __init__(self, config: Any, tokenizer: Any, compute_score: Any, **kwargs: Any) -> None:
        super().__init__(config, tokenizer, compute_score, **kwargs)
        rollout = config.actor_rollout_ref.rollout
        self.group_size = int(rollout.n)
        self.val_group_size = int(rollout.val_kwargs.n)

    async def run_single(self, data: Any) -> dict[str, Any]:
        data = data[-1:]  # as the parent: the last sequence of a multi-sequence output
        item = data[0]
        uid = item.non_tensor_batch.get("uid")
        if uid is not None:
            size = self.val_group_size if data.meta_info.get("validate") else self.group_size
            info = dict(item.non_tensor_batch.get("extra_info") or {})
            info[GROUP_KEY] = {"group_id": str(uid), "group_size": size}
            # new columns: the caller's batch (whose rollouts share their extra_info dict) stays untouched
            columns = {**data.non_tensor_batch, "extra_info": np.array([info], dtype=object)}
            tools = item.non_tensor_batch.get("tool_extra_fields")
            if tools is not None and GROUP_KEY in tools:
                # verl merges a rollout's tool fields into extra_info after this: none may name the group
                kept = {k: v for k, v in dict(tools).items() if k != GROUP_KEY}
                columns["tool_extra_fields"] = np.array([kept], dtype=object)
            data.non_tensor_batch = columns
        result: dict[str, Any] = await super().run_single(data)
        return result
