"""The gateway's load-time reward_kwargs check (core/registry.py `check_signature`, through
`reward_fns.contract.check_reward_kwargs`) on the judges, whose keywords are declared by settings objects:
the injected names are still found, a misspelt key and a mistyped value still stop start-up, named."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.harness.processes import REPO_ROOT, free_port
from rewardfleet.reward_fns import judge, rule_then_judge
from rewardfleet.services.gateway.core.config import FunctionConfig
from rewardfleet.services.gateway.core.registry import check_signature
from tests.support.gateway import gateway_cmd, write_config

INJECTED = {
    "reward_router_address",
    "router_addresses",
    "http_client",
    "reward_model_tokenizer",
    "prompt",
    "images",
    "uid",
}


@pytest.mark.parametrize("fn", [judge.compute_score, rule_then_judge.compute_score])
def test_the_judges_declare_the_injected_names_and_no_open_kwargs(fn: Callable[..., Any]) -> None:
    declared, var_kwargs = check_signature(fn, True, FunctionConfig(reward_kwargs={"pool": "judge"}))
    assert declared == INJECTED and var_kwargs is False


@pytest.mark.parametrize(
    ("fn", "kwargs", "needle"),
    [
        (judge.compute_score, {"templat": "rubric"}, "reward_kwargs ['templat'] are not parameters"),
        (judge.compute_score, {"timeout_s": "soon"}, "reward_kwargs.timeout_s: 'soon' is not a valid value"),
        (
            rule_then_judge.compute_score,
            {"flaw_penalty": "high"},
            "reward_kwargs.flaw_penalty: 'high' is not",
        ),
    ],
)
def test_check_signature_refuses_naming_the_key(fn: Callable[..., Any], kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        check_signature(fn, True, FunctionConfig(reward_kwargs=kwargs))
    assert needle in str(info.value)


def test_a_real_gateway_refuses_to_start(tmp_path: Path) -> None:
    config = {
        "workers": 1,
        "functions": {
            "judge": {"reward_kwargs": {"timeot_s": 5}},
            "rule_then_judge": {"reward_kwargs": {"skip_judge_splits": "test"}},
        },
    }
    args = ["--port", str(free_port()), "--config", str(write_config(tmp_path / "gw.yaml", config))]
    result = subprocess.run(gateway_cmd(*args), cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "judge: reward_kwargs ['timeot_s'] are not parameters of the function (did you mean" in output
    assert "rule_then_judge: reward_kwargs.skip_judge_splits: 'test' is not a valid value" in output
