"""How many sync calls of one function share a pool task: sized by what a call of that function costs.

A task costs the gateway about 0.25 ms of CPU (pickling, pebble's pipe and threads, a future per call)
whatever the function does, which is most of a cheap rule's cost (a gsm8k check takes microseconds). Chunks
amortise it, but a chunk runs under one call's timeout and a chunk that fails is run again call by call, so
a chunk holds only as many calls as take `_BUDGET_S` of compute together, measured per function in the
workers.
"""

from __future__ import annotations

import math

from rewardfleet.services.gateway.execution.loader import FunctionRef

_BUDGET_S = 0.01  # compute per chunk: far inside any timeout, and ~40x the per-task overhead
_MAX_CHUNK = 256
_SPREAD = 4  # chunks per worker, at least: a slow chunk does not leave the other workers idle
_ALPHA = 0.2  # weight of the newest call in the moving average


class CostEstimates:
    """Exponential moving average of each function's compute time per call, from the workers' own stamps."""

    def __init__(self) -> None:
        self._per_call: dict[FunctionRef, float] = {}

    def observe(self, ref: FunctionRef, seconds: float) -> None:
        prev = self._per_call.get(ref)
        self._per_call[ref] = seconds if prev is None else prev + _ALPHA * (seconds - prev)

    def per_call_s(self, ref: FunctionRef) -> float | None:
        return self._per_call.get(ref)


def chunk_sizes(calls: int, workers: int, per_call_s: float | None, timeout_s: float) -> list[int]:
    """Sizes of the chunks `calls` calls go in, in order; one call per task while the cost is unknown."""
    if calls <= 0:
        return []
    if per_call_s is None:
        return [1] * calls
    budget = min(_BUDGET_S, timeout_s / 10)
    by_cost = max(1, min(_MAX_CHUNK, int(budget / max(per_call_s, 1e-7))))
    by_spread = max(1, math.ceil(calls / (max(1, workers) * _SPREAD)))
    size = min(by_cost, by_spread)
    full, rest = divmod(calls, size)
    return [size] * full + ([rest] if rest else [])
