"""The `ray:` and `slurm:` sections, the batch script, the plan placed on a Slurm allocation and the client's
`ray:` address: what needs no cluster (the clusters themselves run in tests/fleet/on_ray and on_slurm)."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT, rewardfleet_cmd
from rewardfleet.services.client import ray_discovery
from rewardfleet.services.fleet.config import FleetConfigError, load_fleet_config
from rewardfleet.services.fleet.on_ray.children import fill, with_placeholders
from rewardfleet.services.fleet.on_ray.engine import pool_placement
from rewardfleet.services.fleet.on_slurm.allocation import Allocation, place
from rewardfleet.services.fleet.on_slurm.sbatch import script
from rewardfleet.services.fleet.plan import plan_fleet

POOLS = """
pools:
  rm: {kind: reward_model, model_path: /m/rm, replicas: 3, server_args: {torch-num-threads: 2}}
  judge: {kind: judge, backend: sglang, model_path: Qwen/Qwen2.5-7B-Instruct, server_args: {tp-size: 2}}
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    return load_fleet_config(path)


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ("ray: {pools: {nope: {num_cpus: 1}}}", "ray.pools: ['nope'] are not pools"),
        ("ray: {gateway: {replicas: 2}}", "needs gateway.state.state_url"),
        ("ray: {gateway: {autoscale: {max_replicas: 2}}}", "needs gateway.state.state_url"),
        ("ray: {gateway: {autoscale: {target_inflight: 0}}}", "target_inflight"),
        ("ray: {pools: {rm: {resources: {CPU: 2}}}}", "use num_cpus / num_gpus"),
        ("ray: {gateway: {resources: {gateway_node: 0}}}", "resources.gateway_node must be > 0"),
        ("ray: {placement_strategy: EVERYWHERE}", "ray.placement_strategy"),
        ("ray: {max_restarts: -2}", "ray.max_restarts"),
        ("slurm: {time: soon}", "is not a Slurm time"),
        ("slurm: {sbatch_args: ['-A rl']}", "one long option"),
        ("slurm: {gpu_nodes: -1}", "slurm.gpu_nodes"),
    ],
)
def test_engine_sections_name_the_key(tmp_path: Path, section: str, needle: str) -> None:
    with pytest.raises(FleetConfigError, match=None) as info:
        _load(tmp_path, POOLS + section)
    assert needle in str(info.value), info.value


def test_ray_refuses_a_prm_pool(tmp_path: Path) -> None:
    with pytest.raises(FleetConfigError, match="kind prm"):
        _load(tmp_path, "pools: {p: {kind: prm, model_path: /m/prm}}\nray: {}")


def test_ray_resources_default_to_threads_and_tensor_parallel_size(tmp_path: Path) -> None:
    cfg = _load(tmp_path, POOLS + "ray: {pools: {judge: {num_cpus: 8}}}")
    assert pool_placement(cfg.pools["rm"], None) == {"num_cpus": 2.0, "num_gpus": 0.0, "resources": {}}
    assert cfg.ray is not None
    judge = pool_placement(cfg.pools["judge"], cfg.ray.pools["judge"])
    assert judge == {"num_cpus": 8.0, "num_gpus": 2.0, "resources": {}}


def test_a_planned_command_gets_the_node_address_where_it_runs() -> None:
    argv = ["/venv/bin/python", "-m", "x", "serve-model", "--host", "127.0.0.1", "--port", "1234", "--y", "2"]
    held = with_placeholders(argv, "/venv/bin/python")
    assert held == ["{python}", "-m", "x", "serve-model", "--host", "{host}", "--port", "{port}", "--y", "2"]
    assert fill(held, "10.0.0.7", 40000, "/opt/py") == [
        "/opt/py", "-m", "x", "serve-model", "--host", "10.0.0.7", "--port", "40000", "--y", "2",
    ]  # fmt: skip


def test_the_plan_placed_on_an_allocation(tmp_path: Path) -> None:
    cfg = _load(tmp_path, POOLS + f"run_dir: {tmp_path / 'run'}\n")
    plan = plan_fleet(cfg)
    placed = place(plan, Allocation("77", "cpu1", ["gpu1", "gpu2"], heterogeneous=True))
    rm, judge = placed.pools
    assert [r.url.split(":")[1] for r in rm.replicas] == ["//gpu1", "//gpu2", "//gpu1"]
    assert judge.replicas[0].url.startswith("http://gpu2:")
    argv = list(judge.replicas[0].argv)
    assert argv[:argv.index("--")] == [
        "srun", "--nodes=1", "--ntasks=1", "--nodelist=gpu2", "--job-name=judge-0", "--kill-on-bad-exit=1",
        "--unbuffered", "--het-group=1", "--exact", "--gres=gpu:2", "--cpus-per-task=4",
    ]  # fmt: skip
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    assert all(
        r.spec is not None and r.spec.readiness_url == f"{r.url}/ready" for r in rm.replicas + judge.replicas
    )
    assert rm.router.worker_urls == [r.url for r in rm.replicas]
    assert "--worker-urls" in rm.router_spec.argv and rm.replicas[0].url in rm.router_spec.argv
    assert placed.gateway_url == f"http://cpu1:{cfg.gateway.port}"
    assert "host: 0.0.0.0" in placed.gateway_config_text
    assert not any("SGLang is not installed here" in note for note in placed.notes)


def test_slurm_dry_run_prints_a_heterogeneous_batch_script(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(POOLS + "slurm: {partition: cpu, gpu_partition: gpu, gpu_nodes: 2, time: '1-00:00:00', "
                    "sbatch_args: ['--account=rl']}\n")  # fmt: skip
    proc = subprocess.run(
        rewardfleet_cmd("up", "--slurm", "--dry-run", "--config", str(path), "--port", "8123"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    lines = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    het = lines.index("#SBATCH hetjob")
    assert "#SBATCH --partition=cpu" in lines[:het] and "#SBATCH --account=rl" in lines[:het]
    assert lines[het + 1 :] == [
        "#SBATCH --nodes=2", "#SBATCH --gres=gpu:8", "#SBATCH --exclusive", "#SBATCH --partition=gpu",
        "#SBATCH --time=1-00:00:00",
    ]  # fmt: skip
    assert "up --slurm --config" in text and "--port 8123" in text and "srun --overlap" in text
    bash = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
    assert bash.returncode == 0, bash.stderr


def test_the_shipped_batch_script_is_what_its_config_writes() -> None:
    folder = Path(__file__).resolve().parents[2] / "deploy" / "slurm"
    config = load_fleet_config(folder / "fleet.yaml")
    text = script(config, Path("deploy/slurm/fleet.yaml"), Path(".rewardfleet"), "python3")
    assert (folder / "rewardfleet.sbatch").read_text() == text


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("ray:", ("rewardfleet", "rewardfleet")),
        ("ray:fleet2", ("rewardfleet", "fleet2")),
        ("ray:team/fleet2", ("team", "fleet2")),
    ],
)
def test_ray_addresses(address: str, expected: tuple[str, str]) -> None:
    assert ray_discovery.is_ray_address(address)
    assert ray_discovery.parse(address) == expected
    assert not ray_discovery.is_ray_address("http://ray:8000")


def test_the_documented_ray_config_loads(tmp_path: Path) -> None:
    """docs/deploy.md's `fleet.yaml` for `rewardfleet up --ray`, as a user copies it."""
    text = (REPO_ROOT / "docs" / "deploy.md").read_text()
    section = text[text.index("## On Ray (`rewardfleet up --ray`)") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    cfg = _load(tmp_path, block.group(1))
    assert cfg.ray is not None and cfg.ray.gateway.autoscale is not None
    assert cfg.ray.gateway.start_replicas == 2 and cfg.ray.gateway.autoscale.max_replicas == 8
    assert cfg.ray.pools["reward_model"].autoscale is not None
