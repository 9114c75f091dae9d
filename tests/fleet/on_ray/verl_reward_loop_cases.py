"""(Run by test_ray_fleet.py in an interpreter of its own, with verl's antlr4 4.9 first on the path.)

verl 0.9.1's reward loop joins the Ray cluster a fleet was placed on by `rewardfleet up --ray` and scores
through it with no gateway address anywhere: its trainer config is composed from docs/deploy.md's override
lines (no `gateway_url`, no `$REWARDFLEET_URL`), `RewardLoopManager` starts its `RewardLoopWorker` actors on
the cluster's nodes, and each worker's reward file asks the cluster for the fleet's gateway.

Environment: `RF_RAY_ADDRESS` (the cluster), `RF_GATEWAY_URL` (the gateway the fleet published, to check that
the posts went there).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.harness.processes import REPO_ROOT
from tests.integrations.verl_harness import (
    compose_trainer_config,
    last_token_scores,
    rollout_batch,
    write_parquet,
)

# (data_source, question, ground truth, response): right, wrong, right, wrong.
ROWS = [
    ("openai/gsm8k", "What is 6*7?", "42", "6*7 is 42.\n#### 42"),
    ("openai/gsm8k", "What is 5+5?", "10", "5+5 is 11.\n#### 11"),
    ("math_dapo", "What is 2+3?", "5", "2+3=5.\nAnswer: 5"),
    ("math_dapo", "What is 9-4?", "5", "9-4=6.\nAnswer: 6"),
]
SCORED = re.compile(r'^rewardfleet_gateway_requests_total\{route="/score",status="200"\} (\S+)$', re.M)


def documented_lines() -> list[str]:
    """The `reward.` override lines of docs/deploy.md's verl-on-Ray bash block, as a user writes them."""
    text = (REPO_ROOT / "docs" / "deploy.md").read_text()
    section = text[text.index("**verl on the same cluster.**") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "docs/deploy.md's verl-on-Ray part has no bash block"
    lines = [line.split("#", 1)[0].strip().rstrip("\\").strip() for line in block.group(1).splitlines()]
    return [line for line in lines if re.match(r"\+?reward\.\S+=\S+$", line)]


def scored(gateway_url: str) -> float:
    match = SCORED.search(httpx.get(f"{gateway_url}/metrics", timeout=10).text)
    return float(match.group(1)) if match else 0.0


def _score(result: Any) -> float:
    """verl's own score: a number, or a dict's `score` (math_dapo)."""
    return float(result["score"] if isinstance(result, dict) else result)


@pytest.fixture(scope="module")
def on_cluster() -> Iterator[None]:
    """This driver on the fleet's cluster, its workers with this interpreter's path (verl's antlr4)."""
    import ray

    env = {"PYTHONPATH": os.environ["PYTHONPATH"]}
    ray.init(
        address=os.environ["RF_RAY_ADDRESS"],
        namespace="verl-job",
        log_to_driver=False,
        runtime_env={"env_vars": env},
    )
    try:
        yield
    finally:
        ray.shutdown()


def test_reward_loop_manager_scores_through_the_fleet_it_finds_on_the_cluster(
    on_cluster: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import ray
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.utils import hf_tokenizer
    from verl.utils.reward_score import default_compute_score

    from bench.harness.tiny_models import build_tiny_qwen2

    assert "REWARDFLEET_URL" not in os.environ
    tmp = tmp_path_factory.mktemp("verl")
    policy = build_tiny_qwen2(tmp / "policy", kind="causal")
    lines = documented_lines()
    assert lines and not any("gateway_url" in line for line in lines), lines
    config = compose_trainer_config(
        [*lines, f"actor_rollout_ref.model.path={policy}", "reward.num_workers=2"]
    )
    assert "gateway_url" not in (config.reward.custom_reward_function.get("reward_kwargs") or {})
    tokenizer = hf_tokenizer(str(policy))
    rows = [
        {
            "data_source": source, "prompt": [{"role": "user", "content": question}], "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": truth}, "extra_info": {"index": i},
        }
        for i, (source, question, truth, _) in enumerate(ROWS)
    ]  # fmt: skip
    batch = rollout_batch(
        write_parquet(tmp / "train.parquet", rows), tokenizer, [r[3] for r in ROWS], tmp / "c"
    )
    gateway = os.environ["RF_GATEWAY_URL"]
    before = scored(gateway)

    manager = RewardLoopManager(config)
    out = manager.compute_rm_score(batch)

    expected = [_score(default_compute_score(source, resp, truth)) for source, _, truth, resp in ROWS]
    response_len = batch.batch["responses"].shape[-1]
    scores = last_token_scores(out.batch["rm_scores"], batch.batch["attention_mask"], response_len)
    assert scores == expected == [1.0, 0.0, 1.0, -1.0]
    assert list(out.non_tensor_batch["reward_status"]) == ["ok"] * 4
    assert scored(gateway) - before == len(ROWS)  # every row went to the fleet's gateway, none elsewhere
    # The workers are actors of this job on the fleet's cluster, spread over its nodes by verl.
    workers = [
        a
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["name"].startswith("reward_loop_worker_")
    ]
    assert len(workers) == 2 and {a["namespace"] for a in workers} == {"verl-job"}, workers
    for handle in manager.reward_loop_workers:
        ray.kill(handle, no_restart=True)
