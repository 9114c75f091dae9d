"""A noisy judge: the n-th call for a response returns `extra_info["noise"][n]` (calls counted per response
in the gateway process), so a test knows every repeat's score, whatever order the repeats arrive in."""

from collections import Counter

DATA_SOURCES = ("test/noisy",)
_CALLS: Counter = Counter()


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    noise = extra_info["noise"]
    n = _CALLS[solution_str]
    _CALLS[solution_str] += 1
    return float(noise[n % len(noise)])
