"""Adapters that let existing trainers use the reward fleet unchanged.

- `verl_reward`: a file for verl's `custom_reward_function.path` (async `compute_score` → gateway).
- `verl_batch`: the same, coalesced into `/score/batch` requests.
- `verl_group`: `GroupRewardManager`, verl's reward manager sending each prompt's rollouts as one group.
- `trl`: reward callables for TRL's `GRPOTrainer(reward_funcs=[...])`, sync and async (groups with
  `num_generations`).
- `slime`: `group_rm`, slime's `--group-rm` custom reward function, one gateway group per prompt group.
- `routes`: the gateway-side OpenRLHF (`--reward.remote_url`) and slime (`--rm-url`) endpoints, as an
  `APIRouter` built around the gateway's scoring callable.

Nothing is imported here, so the trainer-side adapters stay free of the server stack (`routes` needs fastapi).
"""
