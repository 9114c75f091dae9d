"""`/aggregate_metrics`: the figures NeMo Gym's reward profile reports, over verify answers. Our own code.

Input: `{"verify_responses": [...]}`, each a verify answer with `_ng_task_index` / `_ng_rollout_index`
(0 when absent) and `reward`. Output (NeMo Gym's `AggregateMetrics`):

- `group_level_metrics`: one dict per task: `mean/`, `max/`, `min/`, `median/`, `std/` of every numeric field
  of its rollouts (booleans as 0/1, `response.usage` numbers included; std with n-1, 0 for one rollout);
- `agent_metrics`: the same over every rollout, plus per score (`accuracy` = reward, and each reward
  component by name): `pass@k` (unbiased estimator 1 - C(n-c, k)/C(n, k) for 0/1 scores, else the best of
  the first k), `pass@1[avg-of-k]` (mean of the first k), and with an answer field `majority@k` (the score
  of the most frequent answer among the first k, ties averaged) and `no_answer`; all in percent; plus
  `per_sample_aggregate` and each `pass@1[avg-of-k]` figure's `std_dev_across_runs` / `std_err_across_runs`;
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
MAX_WORK = 1_000_000  # score names x tasks x k: ~15 s of one core at most here (docs/nemo_gym.md)


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


def _pass_at_k(values: list[float], binary: bool, wrong: int, k: int, best: list[float]) -> float:
    if binary:
        return 1.0 if wrong < k else 1.0 - math.comb(wrong, k) / math.comb(len(values), k)
    return best[k - 1]


def _majority(votes: Counter[tuple[Any, float]]) -> float:
    if not votes:
        return 0.0
    top = max(votes.values())
    tied = [s for (_, s), count in votes.items() if count == top]
    return sum(tied) / len(tied)


def work(tasks: list[list[Mapping[str, Any]]]) -> int:
    """An upper bound of the steps `pass_majority` takes (score names × tasks × the largest k)."""
    names = {n for rollouts in tasks for r in rollouts for n in _scores(r)}
    return (len(names) + 1) * len(tasks) * min(MAX_K, max((len(t) for t in tasks), default=0))


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
    # (figure, k, name) -> [sum, count] over tasks
    totals: dict[tuple[str, int, str], list[float]] = defaultdict(lambda: [0.0, 0])

    def add(figure: str, k: int, name: str, value: float) -> None:
        cell = totals[(figure, k, name)]
        cell[0] += value
        cell[1] += 1

    for i, task in enumerate(per_task):
        for name in names:
            values = [s[name] for s in task if name in s]
            binary = all(v in (0.0, 1.0) for v in values)
            wrong = sum(1 for v in values if not v)
            best = [max(values[: j + 1]) for j in range(len(values))] if not binary else []
            running, count = 0.0, 0
            votes: Counter[tuple[Any, float]] = Counter()
            for k in range(1, max_k + 1):
                if k <= len(values):
                    add("pass", k, name, _pass_at_k(values, binary, wrong, k, best))
                if k <= len(task) and name in task[k - 1]:  # the first k rollouts that have this score
                    running, count = running + task[k - 1][name], count + 1
                    if answer_field and answers[i][k - 1] is not None:
                        votes[(answers[i][k - 1], task[k - 1][name])] += 1
                if count:
                    add("avg", k, name, running / count)
                if answer_field:
                    add("majority", k, name, _majority(votes))
    out: dict[str, Any] = {}
    label = {"pass": "pass@{k}/{name}", "avg": "pass@1[avg-of-{k}]/{name}", "majority": "majority@{k}/{name}"}
    for k in range(1, max_k + 1):
        for name in names:
            for figure in ("pass", "avg", "majority"):
                cell = totals.get((figure, k, name))
                if cell is not None and cell[1]:
                    out[label[figure].format(k=k, name=name)] = 100.0 * cell[0] / cell[1]
    out.update(_across_runs(per_task, names, max_k))
    return out


def _across_runs(per_task: list[list[dict[str, float]]], names: list[str], max_k: int) -> dict[str, Any]:
    """`per_sample_aggregate` (per name, the percent score of the i-th rollout of every task, i = 0 ..) and
    the spread of those runs for each k >= 2 (`.../std_dev_across_runs`, `.../std_err_across_runs`)."""
    runs: dict[str, list[float]] = {}
    for i in range(max_k):
        for name in names:
            scores = [task[i][name] for task in per_task if i < len(task) and name in task[i]]
            if scores:
                runs.setdefault(name, []).append(100.0 * sum(scores) / len(scores))
    out: dict[str, Any] = {"per_sample_aggregate": runs}
    for k in range(2, max_k + 1):
        for name in names:
            first = runs.get(name, [])[:k]
            if len(first) >= 2:
                std = statistics.stdev(first)
                out[f"pass@1[avg-of-{k}]/{name}/std_dev_across_runs"] = std
                out[f"pass@1[avg-of-{k}]/{name}/std_err_across_runs"] = std / math.sqrt(len(first))
    return out


def _highest_k(metrics: Mapping[str, float], prefix: str) -> dict[str, float]:
    found = [(key, key[len(prefix) :].split("/", 1)) for key in metrics if key.startswith(prefix)]
    ks = [(key, int(k.rstrip("]")), name) for key, (k, name) in found if k.rstrip("]").isdigit()]
    if not ks:
        return {}
    top = max(k for _, k, _ in ks)
    return {key: metrics[key] for key, k, _ in ks if k == top}


def grouped(verify_responses: list[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    """The rows by task index, each task's in rollout order."""
    tasks: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for row in verify_responses:
        tasks[int(row.get(TASK, 0))].append(row)
    for rows in tasks.values():
        rows.sort(key=lambda r: int(r.get(ROLLOUT, 0)))
    return tasks


def by_task(verify_responses: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    tasks = grouped(verify_responses)
    return [tasks[t] for t in sorted(tasks)]


def aggregate(verify_responses: list[Mapping[str, Any]], answer_field: str | None) -> dict[str, Any]:
    """NeMo Gym's `AggregateMetrics` for these verify answers (the caller checked their shape)."""
    if not verify_responses:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}
    tasks = grouped(verify_responses)
    groups = []
    for task in sorted(tasks):
        metrics: dict[str, Any] = _describe([_numbers(r) for r in tasks[task]])
        metrics[TASK] = task
        metrics["num_rollouts"] = len(tasks[task])
        groups.append(metrics)
    agent: dict[str, Any] = _describe([_numbers(r) for r in verify_responses])
    agent.update(pass_majority([tasks[t] for t in sorted(tasks)], answer_field))
    key = {k: v for k, v in agent.items() if k.startswith("mean/")}
    for prefix in ("pass@1[avg-of-", "majority@"):
        key.update(_highest_k(agent, prefix))
    return {"group_level_metrics": groups, "agent_metrics": agent, "key_metrics": key}
