"""What sglang-router 0.3.2's power_of_two policy reads from a worker, checked against the real binary.

The router polls `GET /get_load` on every worker (every 30 s, and live for its own `GET /get_loads`) and takes
a list of per-DP-rank objects, summing their `num_tokens`; a worker without that route (SGLang 0.5.23: it has
`/v1/loads` instead, see tests/sglang_conformance) counts as load -1, so the policy cannot tell workers apart.
The CPU model server answers `/get_load` in that shape; the fleet refuses power_of_two for sglang pools.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bench.harness.tiny_models import build_tiny_qwen2
from rewardfleet.services.fleet.config import FleetConfig
from tests.support.model_server import start_server
from tests.support.router import ReplicaFactory, RouterFactory


def test_router_reads_the_cpu_servers_load_and_not_sglangs(
    tmp_path: Path, start_replica: ReplicaFactory, start_router: RouterFactory
) -> None:
    model = build_tiny_qwen2(tmp_path / "rm", kind="seq_cls")
    cpu = start_server(model, tmp_path, "--is-embedding", name="p2-cpu")
    try:
        sglang_like = start_replica("reward", "sglang")
        router = start_router([cpu.url, sglang_like.url], policy="power_of_two")
        loads = httpx.get(f"{router.url}/get_loads", timeout=30).json()
        by_worker = {w["worker"]: w["load"] for w in loads["workers"]}
        assert by_worker[cpu.url] == 0  # parsed: an idle CPU server, nothing queued or running
        assert by_worker[sglang_like.url] == -1  # no /get_load: unknown
        resp = httpx.post(f"{router.url}/v1/embeddings", json={"model": "m", "input": "hi"}, timeout=30)
        assert resp.status_code == 200, resp.text
    finally:
        cpu.process.stop()


def _pool(**overrides: object) -> dict[str, object]:
    return {"kind": "reward_model", "model_path": "org/rm", "replicas": 2, **overrides}


def test_fleet_refuses_power_of_two_on_sglang_pools() -> None:
    with pytest.raises(ValueError, match=r"power_of_two.*SGLang 0\.5\.23 does not serve"):
        FleetConfig.model_validate(
            {"pools": {"rm": _pool(backend="sglang", router={"policy": "power_of_two"})}}
        )
    with pytest.raises(ValueError, match="at least 2 replicas"):
        FleetConfig.model_validate({"pools": {"rm": _pool(replicas=1, router={"policy": "power_of_two"})}})
    cpu = FleetConfig.model_validate({"pools": {"rm": _pool(router={"policy": "power_of_two"})}})
    assert cpu.pools["rm"].router["policy"] == "power_of_two"
