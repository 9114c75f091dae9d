"""Best-of-n bonus: the best member(s) of a group get a bonus on top of their score.

Every member keeps its score, and the best member(s) get `bonus` on top — unless the whole group scored the
same (nobody is best). Members without a per-sample score stay None."""

from __future__ import annotations

from typing import Any


def compute_group_score(
    samples: list[dict[str, Any]], scores: list[float | None], bonus: float = 1.0, **kwargs: Any
) -> list[float | None]:
    valid = [s for s in scores if s is not None]
    if not valid or max(valid) == min(valid):
        return list(scores)
    best = max(valid)
    return [None if s is None else (s + bonus if s == best else s) for s in scores]
