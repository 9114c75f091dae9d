"""The figures of a re-scoring run, computed from OUTPUT lines (so they also hold after `--resume`).

- `summary`: lines per status; score count, mean and standard deviation per data_source (ok lines).
- `repeat_agreement` (`--repeat N`): each line's spread over its N scores (population std, max - min), and
  agreement on pass/fail (score >= threshold; a binary judge's own verdict): the flip rate (share of lines
  whose N verdicts are not all equal) and Fleiss' kappa.
- `compare` (`--compare EARLIER`): Spearman and Kendall correlation of the lines scored ok in both (scipy),
  the share whose pass/fail flipped, a confusion table (pass / fail / failed, earlier x now) and the lines
  whose score changed most.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from rewardfleet.services.rescore.output import Key, item_key

VERDICTS: tuple[str, ...] = ("pass", "fail", "failed")


def verdict(record: dict[str, Any], threshold: float) -> str:
    """pass / fail for a line scored ok, "failed" for a line with no regular score."""
    if record.get("status") != "ok" or record.get("score") is None:
        return "failed"
    return "pass" if float(record["score"]) >= threshold else "fail"


def summary(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    statuses: Counter[str] = Counter()
    scores: dict[str, list[float]] = defaultdict(list)
    for rec in records:  # once per line: each field read once
        status = rec.get("status")
        statuses[str(status)] += 1
        if status == "ok":
            score = rec.get("score")
            if score is not None:
                scores[str(rec.get("data_source"))].append(float(score))
    per_source = {
        source: {"n": len(values), "mean": mean(values), "std": _pstdev(values)}
        for source, values in sorted(scores.items())
    }
    return {
        "lines": sum(statuses.values()),
        "statuses": dict(sorted(statuses.items())),
        "by_data_source": per_source,
    }


def mean(values: Sequence[float]) -> float:
    """`statistics.fmean` of a non-empty list (the same fsum / n), without importing `statistics` (and its
    `fractions` and `decimal`) on every run: only --repeat's spreads need it."""
    return math.fsum(values) / len(values)


def _pstdev(values: Sequence[float]) -> float:
    """Population standard deviation in floats (`statistics.pstdev` is exact, in fractions: ~10 µs a value,
    a noticeable share of a 100,000-line run's summary)."""
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of N subjects each rated by the same n raters into k categories.

    `counts[i][j]`: raters who put subject i in category j. None when it is undefined (fewer than 2 raters,
    no subjects, or every rating in one category: chance agreement is then 1)."""
    if not counts:
        return None
    raters = sum(counts[0])
    if raters < 2 or any(sum(row) != raters for row in counts):
        return None
    subjects = len(counts)
    p_bar = mean([(sum(c * c for c in row) - raters) / (raters * (raters - 1)) for row in counts])
    totals = [sum(row[j] for row in counts) for j in range(len(counts[0]))]
    p_e = sum((t / (subjects * raters)) ** 2 for t in totals)
    if math.isclose(p_e, 1.0):
        return None
    return (p_bar - p_e) / (1 - p_e)


def repeat_agreement(records: Iterable[dict[str, Any]], threshold: float) -> dict[str, Any]:
    import statistics

    spreads: list[dict[str, Any]] = []
    verdict_counts: list[list[int]] = []
    incomplete = 0
    for rec in records:
        scores = rec.get("scores")
        if not isinstance(scores, list):
            continue
        if rec.get("status") != "ok" or any(s is None for s in scores):
            incomplete += 1
            continue
        values = [float(s) for s in scores]
        spreads.append(
            {"key": list(item_key(rec)), "std": statistics.pstdev(values), "range": max(values) - min(values)}
        )
        passes = sum(v >= threshold for v in values)
        verdict_counts.append([passes, len(values) - passes])
    flips = sum(1 for row in verdict_counts if 0 not in row)
    spreads.sort(key=lambda s: (-s["std"], s["key"]))
    return {
        "lines": len(spreads),
        "lines_with_a_failed_repeat": incomplete,
        "mean_std": mean([s["std"] for s in spreads]) if spreads else None,
        "max_range": max((s["range"] for s in spreads), default=None),
        "flip_rate": flips / len(verdict_counts) if verdict_counts else None,
        "fleiss_kappa": fleiss_kappa(verdict_counts),
        "noisiest": spreads[:10],
    }


def compare(
    earlier: dict[Key, dict[str, Any]], now: dict[Key, dict[str, Any]], threshold: float, top: int = 10
) -> dict[str, Any]:
    common = sorted(set(earlier) & set(now), key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    confusion = {a: dict.fromkeys(VERDICTS, 0) for a in VERDICTS}
    pairs: list[tuple[Key, float, float]] = []
    for key in common:
        old, new = earlier[key], now[key]
        confusion[verdict(old, threshold)][verdict(new, threshold)] += 1
        if verdict(old, threshold) != "failed" and verdict(new, threshold) != "failed":
            pairs.append((key, float(old["score"]), float(new["score"])))
    flipped = sum(1 for _, a, b in pairs if (a >= threshold) != (b >= threshold))
    spearman, kendall = _correlations([a for _, a, _ in pairs], [b for _, _, b in pairs])
    changed = sorted(pairs, key=lambda p: (-abs(p[2] - p[1]), p[0][0], p[0][1] or 0))
    out = {
        "matched": len(common),
        "only_earlier": len(set(earlier) - set(now)),
        "only_now": len(set(now) - set(earlier)),
        "both_ok": len(pairs),
        "spearman": spearman,
        "kendall": kendall,
        "flip_rate": flipped / len(pairs) if pairs else None,
        "flipped": flipped,
        "confusion": confusion,
        "most_changed": [
            {"key": list(k), "earlier": a, "now": b, "delta": b - a} for k, a, b in changed[:top] if a != b
        ],
    }
    components = compare_components(earlier, now, [k for k, _, _ in pairs])
    if components:
        out["components"] = components
    return out


def compare_components(
    earlier: dict[Key, dict[str, Any]], now: dict[Key, dict[str, Any]], keys: Iterable[Key]
) -> dict[str, dict[str, Any]]:
    """Per reward component name found on both sides of the lines scored ok on both: how many lines have
    it on both, their means then and now, and how many changed."""
    values: dict[str, list[tuple[float, float]]] = {}
    for key in keys:
        old = earlier[key].get("reward_components")
        new = now[key].get("reward_components")
        if not isinstance(old, dict) or not isinstance(new, dict):
            continue
        for name in sorted(set(old) & set(new)):
            a, b = old[name], new[name]
            if isinstance(a, int | float) and isinstance(b, int | float):
                values.setdefault(str(name), []).append((float(a), float(b)))
    return {
        name: {
            "both": len(pairs),
            "mean_earlier": mean([a for a, _ in pairs]),
            "mean_now": mean([b for _, b in pairs]),
            "changed": sum(1 for a, b in pairs if a != b),
        }
        for name, pairs in values.items()
    }


class ScipyMissing(RuntimeError):
    """--compare needs scipy for the rank correlations."""


def _correlations(x: list[float], y: list[float]) -> tuple[float | None, float | None]:
    # Undefined (and scipy warns) with fewer than 2 pairs or a constant side.
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    try:
        from scipy import stats
    except ImportError as exc:
        raise ScipyMissing(
            "--compare needs scipy for Spearman/Kendall: pip install 'reward-fleet[rescore]'"
        ) from exc
    return float(stats.spearmanr(x, y).statistic), float(stats.kendalltau(x, y).statistic)
