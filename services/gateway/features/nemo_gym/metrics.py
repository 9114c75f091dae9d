"""`/aggregate_metrics`: the figures NeMo Gym's reward profile reports, over verify answers. Our own code.

Input: `{"verify_responses": [...]}`, each a verify answer with `_ng_task_index` / `_ng_rollout_index`
(0 when absent) and `reward`. Output (NeMo Gym's `AggregateMetrics`):

- `group_level_metrics`: one dict per task: `mean/`, `max/`, `min/`, `median/`, `std/` of every numeric field
  of its rollouts (booleans as 0/1, `response.usage` numbers included; std with n-1, 0 for one rollout);
- `agent_metrics`: the same over every rollout, plus per score (`accuracy` = reward, and each reward
  component by name): `pass@k` (unbiased estimator 1 - C(n-c, k)/C(n, k) for 0/1 scores, else the best of
  the first k), `pass@1[avg-of-k]` (mean of the first k), and with an answer field `majority@k` (the score
  of the most frequent answer among the first k, ties averaged) and `no_answer`; all in percent;
- `key_metrics`: the `mean/` entries and the figures at the highest k.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

TASK, ROLLOUT = "_ng_task_index", "_ng_rollout_index"
MAX_RESPONSES = 100_000
MAX_K = 1024


def _numbers(row: Mapping[str, Any]) -> dict[str, float]:
    merged: dict[str, Any] = dict(row)
    response = row.get("response")
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if isinstance(usage, Mapping):
        merged = {**merged, **usage}
    out: dict[str, float] = {}
    for key, value in merged.items():
        if key in (TASK, ROLLOUT, "response"):
            continue
        if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
            out[str(key)] = float(value)
    return out


def _describe(rows: list[dict[str, float]]) -> dict[str, float]:
    columns: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for key, value in row.items():
            columns[key].append(value)
    out: dict[str, float] = {}
    for key, values in sorted(columns.items()):
        out[f"mean/{key}"] = statistics.fmean(values)
        out[f"max/{key}"] = max(values)
        out[f"min/{key}"] = min(values)
        out[f"median/{key}"] = statistics.median(values)
        out[f"std/{key}"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return out


def _scores(row: Mapping[str, Any]) -> dict[str, float]:
    scores = {"accuracy": float(row["reward"])}
    components = row.get("reward_components")
    if isinstance(components, Mapping):
        for name, value in components.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and name != "accuracy":
                scores[str(name)] = float(value)
    return scores


def _pass_at_k(values: list[float], k: int) -> float:
    if all(v in (0.0, 1.0) for v in values):
        wrong = sum(1 for v in values if not v)
        return 1.0 if wrong < k else 1.0 - math.comb(wrong, k) / math.comb(len(values), k)
    return max(values[:k])


def _majority(answers: list[Any], scores: list[float]) -> float:
    votes = Counter((a, s) for a, s in zip(answers, scores, strict=True) if a is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    tied = [s for (_, s), count in votes.items() if count == top]
    return sum(tied) / len(tied)


def pass_majority(tasks: list[list[Mapping[str, Any]]], answer_field: str | None) -> dict[str, float]:
    """pass@k, pass@1[avg-of-k], majority@k (percent) per score name, k = 1 .. the most rollouts of a task."""
    per_task = [[_scores(r) for r in rollouts] for rollouts in tasks]
    answers = [[r.get(answer_field) for r in rollouts] for rollouts in tasks] if answer_field else []
    if answer_field:
        for task_scores, task_answers in zip(per_task, answers, strict=True):
            for s, a in zip(task_scores, task_answers, strict=True):
                s["no_answer"] = 1.0 if a is None else 0.0
    names = sorted({n for task in per_task for s in task for n in s})
    max_k = min(MAX_K, max((len(t) for t in tasks), default=0))
    out: dict[str, float] = {}
    for k in range(1, max_k + 1):
        for name in names:
            passes, means, majorities = [], [], []
            for i, task in enumerate(per_task):
                values = [s[name] for s in task if name in s]
                if len(values) >= k:
                    passes.append(_pass_at_k(values, k))
                first = [s[name] for s in task[:k] if name in s]
                if first:
                    means.append(sum(first) / len(first))
                if answer_field:
                    pairs = [
                        (a, s[name]) for a, s in zip(answers[i][:k], task[:k], strict=False) if name in s
                    ]
                    majorities.append(_majority([a for a, _ in pairs], [s for _, s in pairs]))
            if passes:
                out[f"pass@{k}/{name}"] = 100.0 * sum(passes) / len(passes)
            if means:
                out[f"pass@1[avg-of-{k}]/{name}"] = 100.0 * sum(means) / len(means)
            if majorities:
                out[f"majority@{k}/{name}"] = 100.0 * sum(majorities) / len(majorities)
    return out


def _highest_k(metrics: Mapping[str, float], prefix: str) -> dict[str, float]:
    found = [(key, key[len(prefix) :].split("/", 1)) for key in metrics if key.startswith(prefix)]
    ks = [(key, int(k.rstrip("]")), name) for key, (k, name) in found if k.rstrip("]").isdigit()]
    if not ks:
        return {}
    top = max(k for _, k, _ in ks)
    return {key: metrics[key] for key, k, _ in ks if k == top}


def aggregate(verify_responses: list[Mapping[str, Any]], answer_field: str | None) -> dict[str, Any]:
    """NeMo Gym's `AggregateMetrics` for these verify answers (the caller checked their shape)."""
    if not verify_responses:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}
    by_task: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for row in verify_responses:
        by_task[int(row.get(TASK, 0))].append(row)
    for rows in by_task.values():
        rows.sort(key=lambda r: int(r.get(ROLLOUT, 0)))
    groups = []
    for task in sorted(by_task):
        metrics: dict[str, Any] = _describe([_numbers(r) for r in by_task[task]])
        metrics[TASK] = task
        metrics["num_rollouts"] = len(by_task[task])
        groups.append(metrics)
    agent: dict[str, Any] = _describe([_numbers(r) for r in verify_responses])
    agent.update(pass_majority([by_task[t] for t in sorted(by_task)], answer_field))
    key = {k: v for k, v in agent.items() if k.startswith("mean/")}
    for prefix in ("pass@1[avg-of-", "majority@"):
        key.update(_highest_k(agent, prefix))
    return {"group_level_metrics": groups, "agent_metrics": agent, "key_metrics": key}
