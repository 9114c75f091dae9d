"""Probes on SGLang pods and containers, checked against SGLang 0.5.23's own health code and the stand-in.

SGLang's `/health` sends a one-token generation, sleeps 1 s, and waits up to `HEALTH_CHECK_TIMEOUT` (20 s,
read from the wheel's http_server.py) for the scheduler; `/ready` answers at once. A probe on `/health` with
Kubernetes' default 1 s timeout therefore never passes. The stand-in's `/health` takes as long as SGLang's (a
lower bound, measured); that `/ready` answers at once is read from SGLang's source (its handler awaits
nothing), not timed: a measured upper bound would flake on a loaded machine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port
from tests.deploy.helpers import COMPOSE_FILE, K8S
from tests.sglang_conformance import sglang_source as sgl

K8S_DEFAULT_TIMEOUT_S = 1  # timeoutSeconds when a probe does not set it


@pytest.fixture(scope="module")
def standin_timing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, float]]:
    port = free_port()
    log = tmp_path_factory.mktemp("probe-standin") / "standin.log"
    proc = ChildProcess(
        [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", "judge"], log
    )
    try:
        url = f"http://127.0.0.1:{port}"
        proc.wait_http(url + "/ready", timeout_s=60)
        timing = {}
        for path in ("/ready", "/health"):
            started = time.perf_counter()
            assert httpx.get(url + path, timeout=30).status_code == 200
            timing[path] = time.perf_counter() - started
        yield timing
    finally:
        proc.stop()


def sglang_containers() -> list[dict[str, Any]]:
    out = []
    for doc in yaml.safe_load_all((K8S / "sglang-pools.yaml").read_text()):
        if doc and doc.get("kind") == "Deployment":
            for c in doc["spec"]["template"]["spec"]["containers"]:
                if "lmsysorg/sglang" in c["image"]:
                    out.append(c)
    return out


def test_sglang_health_is_slow_by_design() -> None:
    assert sgl.health_sleeps_before_answering()
    assert sgl.health_check_timeout_s() == 20
    assert "/ready" in sgl.routes()
    assert not sgl.handler_awaits("/ready")  # answers at once: any probe timeout fits it
    assert sgl.handler_awaits("/health")


def test_k8s_probes_fit_sglang_health(standin_timing: dict[str, float]) -> None:
    containers = sglang_containers()
    assert containers, "no SGLang containers found in sglang-pools.yaml"
    assert standin_timing["/health"] >= 1.0  # as SGLang's: it sleeps a second before it can answer
    for c in containers:
        for probe in ("startupProbe", "readinessProbe"):
            spec = c[probe]
            assert spec["httpGet"]["path"] == "/ready", f"{c['name']} {probe}"
            assert spec.get("timeoutSeconds", K8S_DEFAULT_TIMEOUT_S) >= K8S_DEFAULT_TIMEOUT_S
        live = c["livenessProbe"]
        assert live["httpGet"]["path"] == "/health"
        timeout = live.get("timeoutSeconds", K8S_DEFAULT_TIMEOUT_S)
        # SGLang's /health answers within its own HEALTH_CHECK_TIMEOUT (after the >= 1 s measured above).
        assert timeout > sgl.health_check_timeout_s(), f"{c['name']}: liveness timeout {timeout}s"


def test_compose_sglang_healthcheck_uses_ready() -> None:
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    checks = [
        s["healthcheck"]["test"]
        for s in compose["services"].values()
        if "lmsysorg/sglang" in str(s.get("image", "")) and "healthcheck" in s
    ]
    assert checks, "no SGLang service with a healthcheck in docker-compose.yml"
    for test in checks:
        assert any("/ready'" in part for part in test) and not any("/health'" in part for part in test)


def test_fleet_waits_on_ready_for_model_servers(tmp_path: Path) -> None:
    from rewardfleet.services.fleet.config import FleetConfig
    from rewardfleet.services.fleet.plan import plan_fleet

    config = FleetConfig.model_validate(
        {"run_dir": str(tmp_path), "pools": {"enc": {"kind": "encoder", "model_path": "builtin:minilm"}}}
    )
    (pool,) = plan_fleet(config).pools
    assert [r.spec.readiness_url for r in pool.replicas if r.spec] == [f"{pool.replicas[0].url}/ready"]
