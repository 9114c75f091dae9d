"""Fleet config validation: every mistake fails at load time with a message naming its key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.harness.processes import rewardfleet_cmd
from rewardfleet.services.fleet.config import FleetConfigError, load_fleet_config
from rewardfleet.services.fleet.plan import plan_fleet, sglang_command


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return load_fleet_config(path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("pools: {j: {kind: judgee, model_path: /m}}", "pools.j.kind"),
        ("pools: {j: {kind: judge}}", "model_path is required"),
        ("pools: {j: {kind: judge, backend: external}}", "needs an `external:` section"),
        (
            "pools: {j: {kind: judge, backend: external, model_path: /m, external: {base_url: 'http://h/v1', "
            "model: m}}}",
            "remove ['model_path']",
        ),
        ("pools: {j: {kind: judge, backend: external, external: {base_url: 'h/v1', model: m}}}", "base_url"),
        (
            "pools: {j: {kind: judge, model_path: /m, external: {base_url: 'http://h/v1', model: m}}}",
            "only for backend external",
        ),
        ("pools: {j: {kind: judge, model_path: /m, replica: 2}}", "pools.j.replica"),
        ("pools: {j: {kind: judge, model_path: /m, replicas: 0}}", "pools.j.replicas"),
        ("pools: {j: {kind: judge, model_path: /m, router: {policy: fastest}}}", "pools.j.router"),
        ("pools: {j: {kind: judge, model_path: /m, router: {port: 1}}}", "set by the fleet"),
        ("pools: {j: {kind: judge, model_path: /m, server_args: {x: [1]}}}", "flag values must be scalars"),
        ("pools: {J-1: {kind: judge, model_path: /m}}", "pool name 'J-1'"),
        ("pools: {j: {kind: judge, model_path: builtin:nope}}", "built-in models are"),
        ("pools: {j: {kind: judge, model_path: /m}}\ndefault_pool: k", "default_pool"),
        ("gateway: {prot: 1}", "gateway.prot"),
        ("gateway: {routers: {j: 'h:1'}}\npools: {j: {kind: judge, model_path: /m}}", "gateway.routers"),
        ("- a list", "must be a mapping"),
        ("pools: [", "not valid YAML"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(FleetConfigError) as err:
        _load(tmp_path, text)
    assert needle in str(err.value)
    assert str(tmp_path / "fleet.yaml") in str(err.value)


def test_default_config_plans_an_encoder_pool_and_a_background_judge_pool() -> None:
    cfg = load_fleet_config(None)
    assert cfg.default_pool == "encoder"
    plan = plan_fleet(cfg)
    pool, judge = plan.pools
    assert judge.config.kind == "judge" and judge.config.load_in_background
    (judge_replica,) = judge.replicas
    assert judge_replica.spec is not None and judge_replica.spec.argv[-4:] != ()
    assert any(a.endswith("SmolLM2-135M-Instruct.Q4_1.gguf") for a in judge_replica.spec.argv)
    # The judge's router is "up" when alive; it routes to the replica once that has loaded.
    assert judge.router_spec.readiness_url is not None and judge.router_spec.readiness_url.endswith(
        "/liveness"
    )
    assert pool.router_spec.readiness_url is not None and pool.router_spec.readiness_url.endswith(
        "/readiness"
    )
    assert "judge:" in plan.gateway_config_text and "smollm2" in plan.gateway_config_text
    assert pool.config.kind == "encoder" and pool.router.policy == "round_robin"
    (replica,) = pool.replicas
    assert replica.spec is not None and "--is-embedding" in replica.spec.argv
    assert pool.router.worker_urls == [replica.url]
    assert f"encoder: {pool.router.address}" in plan.gateway_config_text
    assert "default_router: encoder" in plan.gateway_config_text


def test_ports_are_distinct_and_default_pool_prefers_the_reward_model(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        "pools:\n"
        "  judge: {kind: judge, model_path: /j, replicas: 2}\n"
        "  rm: {kind: reward_model, model_path: /r, replicas: 3, base_port: 41000}\n"
        f"run_dir: {tmp_path / 'run'}\n",
    )
    assert cfg.default_pool == "rm"
    plan = plan_fleet(cfg)
    ports = [int(r.url.rsplit(":", 1)[1]) for p in plan.pools for r in p.replicas]
    ports += [p.router.port for p in plan.pools] + [p.router.prometheus_port for p in plan.pools]
    ports.append(int(plan.gateway_url.rsplit(":", 1)[1]))
    assert len(ports) == len(set(ports)) == 2 + 3 + 2 + 2 + 1
    rm = next(p for p in plan.pools if p.name == "rm")
    assert [r.url for r in rm.replicas] == [f"http://127.0.0.1:{41000 + i}" for i in range(3)]
    # The reward model's checkpoint doubles as the tokenizer verl-style DisRM functions get injected.
    assert "reward_model_tokenizer: /r" in plan.gateway_config_text


def test_duplicate_configured_port_is_refused(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "pools: {j: {kind: judge, model_path: /j, base_port: 8000}}\n")
    with pytest.raises(ValueError, match="port 8000 is configured twice"):
        plan_fleet(cfg)


def test_sglang_pools_get_launch_server_lines_with_is_embedding_for_reward_models(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        "pools:\n"
        "  judge: {kind: judge, backend: sglang, model_path: Qwen/Qwen2.5-7B-Instruct, base_port: 30010,\n"
        "          server_args: {tp-size: 2, mem_fraction_static: 0.8}}\n"
        "  rm: {kind: reward_model, backend: sglang, model_path: Skywork/RM, served_model_name: rm}\n",
    )
    judge = cfg.pools["judge"]
    cmd = sglang_command(judge, "http://127.0.0.1:30010")
    assert cmd[:3] == ["python3", "-m", "sglang.launch_server"]
    assert "--is-embedding" not in cmd and "--enable-metrics" in cmd
    assert cmd[cmd.index("--port") + 1] == "30010"
    assert cmd[cmd.index("--tp-size") + 1] == "2" and "--mem-fraction-static" in cmd
    rm_cmd = sglang_command(cfg.pools["rm"], "http://127.0.0.1:30020")
    assert "--is-embedding" in rm_cmd and rm_cmd[rm_cmd.index("--served-model-name") + 1] == "rm"
    plan = plan_fleet(cfg)  # SGLang is not installed here: the plan says what to run on the GPU host
    assert all(r.spec is None for p in plan.pools for r in p.replicas)
    assert any("sglang.launch_server" in note for note in plan.notes)


def test_relative_reward_fns_dirs_are_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "fns").mkdir()
    cfg = _load(tmp_path, "gateway: {reward_fns_dirs: [fns]}\n")
    assert cfg.gateway.reward_fns_dirs == [(tmp_path / "fns").resolve()]


def test_up_with_a_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("pools: {j: {kind: judge, model_path: /m, replicas: -1}}\n")
    cmd = rewardfleet_cmd("up", "--config", str(path))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "pools.j.replicas" in proc.stderr


def test_image_reward_model_pools_serve_a_dual_encoder(tmp_path: Path) -> None:
    clip, rm = tmp_path / "clip", tmp_path / "rm"
    for folder, arch in ((clip, "CLIPModel"), (rm, "Qwen2ForSequenceClassification")):
        folder.mkdir()
        (folder / "config.json").write_text(f'{{"architectures": ["{arch}"]}}')
    cfg = _load(
        tmp_path,
        f"pools:\n  images: {{kind: image_reward_model, model_path: {clip}}}\n"
        "  gpu: {kind: image_reward_model, backend: sglang, model_path: yuvalkirstain/PickScore_v1}\n",
    )
    assert cfg.default_pool == "images"  # no reward model or judge: the image pool's router is the default
    assert "--is-embedding" in sglang_command(cfg.pools["gpu"], "http://127.0.0.1:30020")
    plan = plan_fleet(cfg)
    images = next(p for p in plan.pools if p.name == "images")
    assert "--is-embedding" in images.replicas[0].argv
    with pytest.raises(FleetConfigError, match="image_reward_model pool serves a dual encoder"):
        _load(tmp_path, f"pools: {{images: {{kind: image_reward_model, model_path: {rm}}}}}\n")
