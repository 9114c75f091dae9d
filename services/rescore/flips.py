"""`--repeat N` per reward function: how many lines changed score between repeats, and how many flipped.

"changed" is bit for bit: a line whose N scores are not all the same float (JSON keeps a float's exact value,
so nothing is lost between the gateway and this count). "flips" is the coarser judge-noise figure of
`stats.repeat_agreement`: some repeats at or above the pass threshold and some below. With every pool of a
function deterministic (docs/reproducibility.md) and its judge's seed taken from the question, both are 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table


def flips_by_function(records: Iterable[dict[str, Any]], threshold: float) -> dict[str, dict[str, Any]]:
    """{reward_fn: {lines, changed, flips, max_range, lines_with_a_failed_repeat}} over repeated lines."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        scores = rec.get("scores")
        if not isinstance(scores, list):
            continue
        row = out.setdefault(
            str(rec.get("reward_fn") or "-"),
            {"lines": 0, "changed": 0, "flips": 0, "max_range": 0.0, "lines_with_a_failed_repeat": 0},
        )
        if rec.get("status") != "ok" or any(s is None for s in scores):
            row["lines_with_a_failed_repeat"] += 1
            continue
        values = [float(s) for s in scores]
        row["lines"] += 1
        if len(set(values)) > 1:
            row["changed"] += 1
        passes = sum(v >= threshold for v in values)
        if 0 < passes < len(values):
            row["flips"] += 1
        row["max_range"] = max(row["max_range"], max(values) - min(values))
    return dict(sorted(out.items()))


def flips_table(by_function: dict[str, dict[str, Any]], repeat: int) -> Table:
    table = Table(title=f"per reward function over {repeat} repeats (changed: not bitwise equal)")
    for column in ("reward_fn", "lines", "changed", "flips", "max_range", "failed repeats"):
        table.add_column(column, justify="left" if column == "reward_fn" else "right")
    for name, row in by_function.items():
        table.add_row(
            name, str(row["lines"]), str(row["changed"]), str(row["flips"]), f"{row['max_range']:.4g}",
            str(row["lines_with_a_failed_repeat"]),
        )  # fmt: skip
    return table
