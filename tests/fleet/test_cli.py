"""`rewardfleet up --dry-run`: every command the fleet would run and the gateway's config, with no secret."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from bench.harness.processes import rewardfleet_cmd
from rewardfleet.services.fleet.config import DEFAULT_CONFIG_PATH

SECRETS = (
    "sk-gateway-key-1-a8f03c",
    "sk-judge-key",
    "hf_readtoken",
    "redispw",
    "judgepw",
    "routerkey-3c7e9a1f0b",
)


def _dry_run(*args: str) -> str:
    proc = subprocess.run(
        rewardfleet_cmd("up", "--dry-run", *args), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_dry_run_prints_every_command(tmp_path: Path) -> None:
    out = _dry_run("--run-dir", str(tmp_path), "--port", "18123")
    assert "serve-model" in out and "sglang-router launch" in out
    assert "gateway --config" in out and "port: 18123" in out
    assert DEFAULT_CONFIG_PATH.is_file()


def _secret_fleet(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        textwrap.dedent(f"""
        run_dir: {tmp_path / "run"}
        pools:
          judge:
            kind: judge
            backend: sglang
            model_path: Qwen/Qwen2.5-7B-Instruct
            replicas: 3
            base_port: 31000
            server_args: {{api-key: routerkey-3c7e9a1f0b, hf-token: hf_readtoken}}
            router: {{api_key: routerkey-3c7e9a1f0b}}
        gateway:
          port: 18124
          api_keys: [sk-gateway-key-1-a8f03c, sk-gateway-key-2-b19e4d]
          functions:
            my_judge:
              path: rewardfleet.reward_fns.judge:judge_score
              reward_kwargs:
                api_key: sk-judge-key
                base_url: "https://judge:judgepw@judge.example.com/v1"
                cache_url: "redis://:redispw@127.0.0.1:6379/0"
                max_tokens: 512
        """)
    )
    return path


def test_dry_run_shows_no_secret(tmp_path: Path) -> None:
    out = _dry_run("--config", str(_secret_fleet(tmp_path)))
    leaked = [s for s in SECRETS if s in out]
    assert not leaked, f"dry run printed {leaked}:\n{out}"
    # What is not secret still shows, so the output stays useful.
    assert "redis://:***@127.0.0.1:6379/0" in out and "https://judge:***@judge.example.com/v1" in out
    assert "max_tokens: 512" in out and "port: 18124" in out and "--api-key ***" in out


def test_dry_run_leaves_the_gateway_file_its_keys(tmp_path: Path) -> None:
    from rewardfleet.services.fleet.config import load_fleet_config
    from rewardfleet.services.fleet.plan import plan_fleet

    plan = plan_fleet(load_fleet_config(_secret_fleet(tmp_path)))
    # Redaction is for display only: the gateway child reads the real keys from its own file.
    assert "sk-gateway-key-1-a8f03c" in plan.gateway_config_text and "redispw" in plan.gateway_config_text


def test_dry_run_shows_each_external_replica_its_own_port(tmp_path: Path) -> None:
    out = _dry_run("--config", str(_secret_fleet(tmp_path)))
    for i in range(3):
        header = f"# judge-{i} (external"
        assert header in out, out
        line = out.split(header, 1)[1].splitlines()[1]
        assert "sglang.launch_server" in line and f"--port {31000 + i}" in line, line
