"""`deterministic: true` where pools are deployed: the fleet's command lines, the compose override and the
Kubernetes overlay each add SGLang 0.5.23's own flags (checked against the pinned wheel's flag list) or the
CPU server's (checked against `serve-model --help`), and nothing else."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rewardfleet.services.cli import app
from rewardfleet.services.fleet.config import FleetConfigError, PoolConfig
from rewardfleet.services.fleet.determinism import SGLANG_DETERMINISTIC_ATTENTION_BACKENDS
from rewardfleet.services.fleet.plan import _cpu_command, sglang_command
from tests.deploy.helpers import COMPOSE_FILE, DEPLOY, K8S, tool
from tests.deploy.sglang_flags import load_snapshot, unknown_flags

OVERRIDE = DEPLOY / "docker-compose.deterministic.yml"
K8S_DETERMINISTIC = DEPLOY / "k8s-deterministic"
SGLANG_FLAGS = ["--enable-deterministic-inference", "--attention-backend", "triton"]


def _serve_model_options() -> set[str]:
    result = CliRunner().invoke(app, ["serve-model", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", result.output))


def test_the_flags_exist_where_they_are_used() -> None:
    flags = load_snapshot()
    assert unknown_flags(SGLANG_FLAGS, flags) == []
    assert "--enable-deterministic-inference" in _serve_model_options()
    # The list the fleet checks server_args against is SGLang's (arg_groups/choices.py of the pinned wheel,
    # read with ast: importing sglang needs GPU packages).
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the sglang wheel is not installed")
    source = Path(next(iter(spec.submodule_search_locations)), "srt", "arg_groups", "choices.py")
    choices = next(
        ast.literal_eval(node.value)
        for node in ast.parse(source.read_text()).body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") == "DETERMINISTIC_ATTENTION_BACKEND_CHOICES" for t in node.targets)
    )
    assert set(SGLANG_DETERMINISTIC_ATTENTION_BACKENDS) == set(choices)


def _pool(**fields: Any) -> PoolConfig:
    return PoolConfig.model_validate({"kind": "judge", "model_path": "/models/judge", **fields})


def test_fleet_command_lines() -> None:
    url = "http://127.0.0.1:30000"
    assert "--enable-deterministic-inference" not in sglang_command(_pool(backend="sglang"), url)
    cmd = sglang_command(_pool(backend="sglang", deterministic=True), url)
    assert cmd[-3:] == SGLANG_FLAGS
    assert unknown_flags(cmd[3:], load_snapshot()) == []
    chosen = sglang_command(
        _pool(backend="sglang", deterministic=True, server_args={"attention-backend": "flashinfer"}), url
    )
    assert chosen[-3:] == ["--attention-backend", "flashinfer", "--enable-deterministic-inference"]
    assert "triton" not in chosen
    cpu = _cpu_command(_pool(backend="cpu", deterministic=True, model_path="/models/judge"), 30001)
    assert cpu[-1] == "--enable-deterministic-inference"
    assert "--enable-deterministic-inference" not in _cpu_command(_pool(model_path="/models/judge"), 30001)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"backend": "sglang", "server_args": {"attention-backend": "torch_native"}}, "attention-backend"),
        ({"backend": "external", "model_path": None, "external": {"base_url": "http://x/v1", "model": "m"}},
         "deterministic"),
    ],
)  # fmt: skip
def test_fleet_refuses_what_cannot_be_deterministic(fields: dict[str, Any], named: str) -> None:
    with pytest.raises((ValueError, FleetConfigError)) as info:
        _pool(deterministic=True, **fields)
    assert named in str(info.value)


def test_compose_override_is_the_base_command_plus_the_flags() -> None:
    base = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    override = yaml.safe_load(OVERRIDE.read_text())["services"]
    assert set(override) == {"judge-sglang", "reward-model-sglang", "judge-cpu", "reward-model-cpu"}
    for name, service in override.items():
        assert set(service) == {"command"}, f"{name}: the override only changes the command"
        flags = SGLANG_FLAGS if name.endswith("-sglang") else ["--enable-deterministic-inference"]
        assert service["command"] == base[name]["command"] + flags, name
        if name.endswith("-sglang"):
            assert unknown_flags(service["command"][3:], load_snapshot()) == [], name
        else:
            used = {a for a in service["command"] if str(a).startswith("--")}
            assert used <= _serve_model_options(), name
    proc = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(OVERRIDE)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _render(folder: Any) -> list[dict[str, Any]]:
    proc = subprocess.run([tool("kubectl"), "kustomize", str(folder)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def test_kubernetes_overlay_adds_the_flags_and_nothing_else() -> None:
    base, overlay = _render(K8S), _render(K8S_DETERMINISTIC)
    assert len(base) == len(overlay)
    changed = []
    for a, b in zip(base, overlay, strict=True):
        if a == b:
            continue
        changed.append(b["metadata"]["name"])
        args_a = a["spec"]["template"]["spec"]["containers"][0]["args"]
        args_b = b["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args_b == args_a + SGLANG_FLAGS
        assert unknown_flags(args_b, load_snapshot()) == []
        a["spec"]["template"]["spec"]["containers"][0]["args"] = args_b
        assert a == b, "only the args differ"
    assert sorted(changed) == ["sglang-judge", "sglang-reward-model"]
