"""The built-in `code` reward in a sandbox of one slot (bubblewrap): a saturated sandbox pool."""

from rewardfleet.reward_fns import code


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return await code.compute_score(data_source, solution_str, ground_truth, extra_info, sandbox={"slots": 1})
