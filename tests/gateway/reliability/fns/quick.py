"""Sync: scores len(solution_str) % 7 at once."""


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return float(len(solution_str) % 7)
