"""Fleet pools of kind prm: a CPU PRM pool is addressed directly (sglang-router 0.3.2 does not proxy vLLM's
/pooling), an external PRM pool is a vLLM server (`api: vllm_pooling`); every other combination is refused
at load time naming why."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rewardfleet.services.fleet.config import FleetConfigError, load_fleet_config
from rewardfleet.services.fleet.plan import plan_fleet


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "fleet.yaml"
    path.write_text(text + f"\nrun_dir: {tmp_path / 'run'}\n")
    return load_fleet_config(path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "pools: {p: {kind: prm, backend: sglang, model_path: /m}}",
            "SGLang 0.5.23 serves no process reward",
        ),
        ("pools: {p: {kind: prm, model_path: /m, replicas: 2}}", "replicas must be 1"),
        ("pools: {p: {kind: prm, backend: external}}", "needs an `external:` section"),
        (
            "pools: {p: {kind: prm, backend: external, external: {base_url: 'http://h:8000', model: m}}}",
            "needs external.api: vllm_pooling",
        ),
        (
            "pools: {j: {kind: judge, backend: external, external: {base_url: 'http://h', model: m, "
            "api: vllm_pooling}}}",
            "vllm_pooling is for kind prm",
        ),
        (
            "pools: {p: {kind: prm, backend: external, external: {base_url: 'http://h', model: m, "
            "api: grpc}}}",
            "pools.p.external.api",
        ),
    ],
)
def test_bad_prm_pool_names_the_reason(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(FleetConfigError) as err:
        _load(tmp_path, text)
    assert needle in str(err.value)


def test_cpu_prm_pool_gives_the_gateway_its_replica_not_its_router(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        "pools:\n"
        "  rm: {kind: reward_model, model_path: /r}\n"
        "  prm: {kind: prm, model_path: /p, base_port: 41500, server_args: {step-tag-id: 7}}\n",
    )
    plan = plan_fleet(cfg)
    routers = yaml.safe_load(plan.gateway_config_text)["gateway"]["pools"]["routers"]
    prm = next(p for p in plan.pools if p.name == "prm")
    rm = next(p for p in plan.pools if p.name == "rm")
    assert routers["prm"] == "127.0.0.1:41500"  # the replica itself
    assert routers["rm"] == rm.router.address  # every other kind: its router
    assert "--step-tag-id" in prm.replicas[0].argv and "7" in prm.replicas[0].argv
    assert "--is-embedding" not in prm.replicas[0].argv
    assert any("does not proxy /pooling" in note for note in plan.notes)
    assert cfg.default_pool == "rm"  # a PRM never becomes verl's reward_router_address by default


def test_external_vllm_prm_pool_reaches_the_gateway_as_an_external_pool(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        "pools:\n"
        "  vprm: {kind: prm, backend: external, external: {base_url: 'http://gpu:8000', model: qwen-prm, "
        "api: vllm_pooling}}\n",
    )
    plan = plan_fleet(cfg)
    external = yaml.safe_load(plan.gateway_config_text)["gateway"]["pools"]["external_pools"]
    assert external["vprm"]["api"] == "vllm_pooling"
    assert external["vprm"]["base_url"] == "http://gpu:8000"
