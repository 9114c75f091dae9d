"""Built-in group functions: each module defines `compute_group_score(samples, scores, **kwargs)`.

`samples` is the group's members in order (dicts with uid, group_index, data_source, solution_str,
ground_truth, extra_info, prompt, images); `scores` their per-sample scores (None where the per-sample call
failed). Return one final score per member (None allowed), in the same order.

Functions: `rank_normalise`, `best_of_n_bonus`, `pairwise_judge` and `listwise_judge` (docs/group_judging.md).
Helpers: `_pairwise` (which pairs to compare, how two ordered verdicts combine) and `_group_judging` (what
the two judges share).
"""
