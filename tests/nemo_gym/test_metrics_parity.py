"""`/aggregate_metrics`' pass@k / majority@k figures equal NeMo Gym's own `compute_pass_majority_metrics`
(its source, read from the wheel's `nemo_gym/reward_profile.py` and run here: the function itself is plain
Python) on seeded random rollouts: binary and continuous scores, reward components, missing answers."""

from __future__ import annotations

import ast
import math
import random
import typing
from collections import Counter
from typing import Any

import pytest

from rewardfleet.services.gateway.nemo_gym.metrics import pass_majority
from tests.nemo_gym.nemo_gym_source import read_text


def nemo_gym_function() -> Any:
    tree = ast.parse(read_text("nemo_gym/reward_profile.py"))
    node = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "compute_pass_majority_metrics"
    )
    namespace: dict[str, Any] = {**vars(typing), "math": math, "Counter": Counter}
    exec(compile(ast.Module([node], []), "reward_profile.py", "exec"), namespace)
    return namespace["compute_pass_majority_metrics"]


def rollouts(seed: int) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    tasks = []
    for _ in range(rng.randint(1, 12)):
        binary = rng.random() < 0.6
        task = []
        for _ in range(rng.randint(1, 9)):
            reward = float(rng.random() < 0.5) if binary else round(rng.random(), 3)
            row: dict[str, Any] = {"reward": reward, "extracted_answer": rng.choice(["A", "B", "C", None])}
            if rng.random() < 0.8:
                row["reward_components"] = {"format": float(rng.random() < 0.7)}
            task.append(row)
        tasks.append(task)
    return tasks


def scores(row: dict[str, Any]) -> dict[str, float]:
    return {"accuracy": row["reward"], **row.get("reward_components", {})}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("answer_field", [None, "extracted_answer"])
def test_pass_majority_equals_nemo_gyms(seed: int, answer_field: str | None) -> None:
    tasks = rollouts(seed)
    theirs, *_ = nemo_gym_function()(tasks, score_fn=scores, answer_key=answer_field)
    ours = pass_majority(tasks, answer_field)
    assert set(ours) == set(theirs)
    assert ours["per_sample_aggregate"].keys() == theirs["per_sample_aggregate"].keys()
    for name, runs in theirs["per_sample_aggregate"].items():
        assert ours["per_sample_aggregate"][name] == pytest.approx(runs)
    for key, value in theirs.items():
        if key != "per_sample_aggregate":
            assert ours[key] == pytest.approx(value, abs=1e-9), key
