"""Adapters that let existing trainers use the reward fleet unchanged.

- `verl_reward`: a file for verl's `custom_reward_function.path` (async `compute_score` → gateway).
- `verl_batch`: the same, coalesced into `/score/batch` requests.
- `verl_group`: `GroupRewardManager`, verl's reward manager sending each prompt's rollouts as one group.
- `trl`: reward callables for TRL's `GRPOTrainer(reward_funcs=[...])`, sync and async (groups with
  `num_generations`).
- `trl_components`: one TRL reward function per reward component, sharing each batch's scoring.
- `slime`: `group_rm`, slime's `--group-rm` custom reward function, one gateway group per prompt group.
- `_common`: one client per event loop and the text of a completion, shared by the adapters.
- `_verl_images`: a verl multimodal sample's images as the gateway's `images` (data URLs).

The gateway itself serves OpenRLHF's and slime's remote-RM routes (services/gateway/routes/). Nothing is
imported here, so each adapter loads only what it needs.
"""
