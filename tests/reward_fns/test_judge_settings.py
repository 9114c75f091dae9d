"""The judges' grouped settings (reward_fns/judging/settings.py, issue 24): objects or YAML mappings, and a
misspelt or mistyped setting named at start-up (`startup_check`) and at the call."""

from __future__ import annotations

import inspect

import pytest
import yaml

from bench.harness.processes import REPO_ROOT
from rewardfleet.reward_fns import judge, rule_then_judge
from rewardfleet.reward_fns.judging.settings import (
    GenerationSettings,
    JudgeSettingsError,
    ProbabilitySettings,
    VerdictSettings,
    settings_from,
)


def test_a_mapping_is_laid_over_the_defaults_or_a_base() -> None:
    assert settings_from(GenerationSettings, {"max_tokens": 64}, "generation") == GenerationSettings(64)
    base = GenerationSettings(max_tokens=4096)
    assert settings_from(GenerationSettings, {"temperature": 1}, "generation", base) == GenerationSettings(
        max_tokens=4096, temperature=1
    )
    assert settings_from(GenerationSettings, None, "generation", base) is base
    given = VerdictSettings(scale_max=5)
    assert settings_from(VerdictSettings, given, "verdict") is given
    prob = settings_from(ProbabilitySettings, {"score_server_address": ["a:1", "b:2"]}, "probability")
    assert prob.score_server_address == ["a:1", "b:2"] and prob.label_tokens == ("Yes", "No")


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ({"max_token": 64}, "generation.max_token is not a setting of generation"),
        ({"max_tokens": "64"}, "generation.max_tokens: '64' is not a valid value"),
        ({"max_tokens": True}, "generation.max_tokens: True is not a valid value"),
        ({"use_generate": "yes"}, "generation.use_generate: 'yes' is not a valid value"),
        ({"max_tokens": None}, "generation.max_tokens may not be null"),
        ([64], "generation must be a mapping of settings"),
    ],
)
def test_bad_settings_name_the_field(value: object, needle: str) -> None:
    with pytest.raises(JudgeSettingsError, match=needle):
        settings_from(GenerationSettings, value, "generation")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"verdict": {"scale_mx": 5}}, "verdict.scale_mx is not a setting of verdict"),
        ({"guards": {"max_answer_char": 5}}, "guards.max_answer_char is not a guard setting"),
        ({"method": "vibes"}, "method must be one of"),
        ({"method": "probability"}, "probability.score_server_address"),
        ({"probability": {"score_server_address": "h:1"}}, "method is 'verdict', not 'probability'"),
        ({"template": "nope"}, "unknown judge template 'nope'"),
    ],
)
def test_judge_startup_check_names_the_setting(kwargs: dict, needle: str) -> None:
    with pytest.raises(judge.JudgeConfigError, match=needle):
        judge.startup_check(kwargs)


def test_the_embedded_default_fleet_passes_the_startup_checks() -> None:
    config = yaml.safe_load((REPO_ROOT / "services" / "fleet" / "default.yaml").read_text())
    functions = config["gateway"]["functions"]
    assert functions["judge"]["reward_kwargs"]["method"] == "answer_match"
    judge.startup_check(functions["judge"]["reward_kwargs"])
    rule_then_judge.startup_check(functions["rule_then_judge"]["reward_kwargs"])
    rule_then_judge.startup_check({"generation": {"max_tokens": 64}, "verdict": {"reasoning_chars": 10}})


def test_rule_then_judge_startup_check_names_the_setting() -> None:
    with pytest.raises(judge.JudgeConfigError, match=r"generation\.max_token is not a setting"):
        rule_then_judge.startup_check({"generation": {"max_token": 64}})


def test_the_verl_call_is_kept_and_the_keywords_are_few() -> None:
    """verl calls compute_score(data_source, solution_str, ground_truth, extra_info, reward_router_address=,
    reward_model_tokenizer=, **reward_kwargs); the rest of the 27 keywords are now in four groups."""
    params = inspect.signature(judge.compute_score).parameters
    assert list(params)[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    assert {"reward_router_address", "reward_model_tokenizer"} <= set(params)
    assert {"generation", "verdict", "probability", "guards"} <= set(params)
    assert len(params) <= 20  # + uid, injected by the gateway for generation.seed_uid (issue 42)
