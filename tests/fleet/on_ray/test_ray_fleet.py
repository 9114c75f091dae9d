"""`rewardfleet up --ray` on a real local Ray cluster of three raylets (`ray.cluster_utils.Cluster`).

A light fleet: a reward-model pool of two CPU model servers (a tiny Qwen2 reward model built here) and one
gateway with its router on the head node (the only node offering the `gateway_node` resource). One cluster and
one fleet for the module: it comes up across nodes and answers; a replica's node is removed while ~2,000 posts
are in flight and none is lost, the replica coming back on another node; Ctrl-C leaves no actor, process or
port behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray engine tests need ray (pip install 'reward-fleet[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

from rewardfleet.services.client import AsyncRewardClient, RetryPolicy  # noqa: E402
from tests.fleet.procs import alive, cmdline  # noqa: E402
from tests.support import ChildProcess, rewardfleet_cmd  # noqa: E402
from tests.tiny_models import build_tiny_qwen2  # noqa: E402
from tests.waiting import eventually  # noqa: E402

NAMESPACE = "rewardfleet-test"


@dataclass
class RayFleet:
    cluster: Cluster
    proc: ChildProcess
    run_dir: Path
    rm: Path

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "fleet.json").read_text())
        return data

    def gateway(self) -> str:
        urls: list[str] = ray.get(ray.get_actor("rf", namespace=NAMESPACE).gateways.remote(), timeout=10)
        assert urls, "no gateway published"
        return urls[0]


def _sample(i: int) -> dict[str, Any]:
    return {
        "data_source": "chat", "reward_fn": "reward_model", "solution_str": f"It is {2 * i}.",
        "ground_truth": None, "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "uid": f"sample-{i}",
    }  # fmt: skip


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayFleet]:
    tmp = tmp_path_factory.mktemp("ray")
    rm = build_tiny_qwen2(tmp / "rm", "seq_cls", seed=2)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 2, "resources": {"gateway_node": 1}, "include_dashboard": False},
    )
    for _ in range(2):
        cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False)
    (tmp / "fleet.yaml").write_text(
        textwrap.dedent(f"""
        pools:
          reward_model:
            kind: reward_model
            model_path: {rm}
            served_model_name: tiny-rm
            replicas: 2
            server_args: {{torch-num-threads: 1, max-batch-size: 32}}
            router: {{policy: round_robin, health_check_interval_secs: 1, health_check_timeout_secs: 1}}
        run_dir: {tmp / "run"}
        ready_timeout_s: 180
        gateway:
          workers: 1
          functions:
            reward_model: {{timeout_s: 60, reward_kwargs: {{model: tiny-rm}}}}
        ray:
          name: rf
          namespace: {NAMESPACE}
          gateway: {{resources: {{gateway_node: 1}}}}
        """)
    )
    cmd = rewardfleet_cmd("up", "--ray", cluster.address, "--config", str(tmp / "fleet.yaml"))
    proc = ChildProcess(cmd, tmp / "up.log", env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"})
    running = RayFleet(cluster, proc, tmp / "run", rm)
    try:
        eventually(
            lambda: "ready in" in proc.log() or proc.proc.poll() is not None,
            timeout_s=240, interval_s=0.5, what="the fleet ready",
        )  # fmt: skip
        assert "ready in" in proc.log(), proc.log()
        yield running
    finally:
        proc.stop(timeout_s=120)
        ray.shutdown()
        cluster.shutdown()


def test_the_fleet_comes_up_across_nodes_and_answers(fleet: RayFleet) -> None:
    state = fleet.state()
    head = fleet.cluster.head_node.node_id
    gateways = state["ray"]["gateways"]
    replicas = state["ray"]["pools"]["reward_model"]
    assert len(gateways) == 1 and gateways[0]["node_id"] == head  # the only node with gateway_node
    assert len(replicas) == 2 and replicas[0]["node_id"] != replicas[1]["node_id"], replicas
    url = fleet.gateway()
    assert url == gateways[0]["url"]

    async def score() -> list[Any]:
        async with AsyncRewardClient(url) as client:
            return await client.score_many([_sample(i) for i in range(8)])

    results = asyncio.run(score())
    assert all(r.status == "ok" and isinstance(r.score, float) for r in results), results
