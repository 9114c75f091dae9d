"""Master-key probes on by default for the judge pools a fleet runs (services/fleet/default_probes.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from rewardfleet.services.fleet.config import load_fleet_config
from rewardfleet.services.fleet.plan import plan_fleet


def _probes(plan_text: str) -> list[str]:
    return list(yaml.safe_load(plan_text)["gateway"]["judge_probes"]["functions"])


def _plan(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "fleet.yaml"
    path.write_text(text + f"run_dir: {tmp_path / 'run'}\n")
    return _probes(plan_fleet(load_fleet_config(path)).gateway_config_text)


def test_the_embedded_default_probes_its_judge_pool() -> None:
    assert _probes(plan_fleet(load_fleet_config(None)).gateway_config_text) == ["judge"]


def test_a_config_naming_a_judge_pool_probes_it_unless_turned_off(tmp_path: Path) -> None:
    pools = "pools:\n  grader: {kind: judge, model_path: /j}\n  rm: {kind: reward_model, model_path: /r}\n"
    # The built-in judge pointed at the pool "grader" probes it; rule_then_judge on it adds nothing.
    fns = (
        "gateway:\n  functions:\n    judge: {reward_kwargs: {pool: grader}}\n"
        "    rule_then_judge: {reward_kwargs: {pool: grader}}\n"
    )
    assert _plan(tmp_path, pools + fns) == ["judge"]
    # A pool named `judge` is the built-in judge's default pool: probed with no function configured.
    assert _plan(tmp_path, "pools:\n  judge: {kind: judge, model_path: /j}\n") == ["judge"]
    # No function names the pool "grader": nothing to probe it through.
    assert _plan(tmp_path, pools) == []
    # No judge pool: no probes.
    assert _plan(tmp_path, "pools:\n  rm: {kind: reward_model, model_path: /r}\n") == []
    # Turned off: judge_probes as written.
    assert _plan(tmp_path, pools + fns + "  judge_probes: {functions: []}\n") == []
    # A user's own file under a built-in name is not probed.
    own = "gateway:\n  functions:\n    judge: {path: 'my.mod:fn', reward_kwargs: {pool: grader}}\n"
    assert _plan(tmp_path, pools + own) == []
