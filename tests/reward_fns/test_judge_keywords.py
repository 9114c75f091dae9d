"""The judges' flat keywords, declared by settings dataclasses (reward_fns/judging/keywords.py, issue 38): the
signature users, verl and the gateway see is unchanged, the bodies take settings objects, and an unknown key
or a mistyped value is refused naming it, at the call and at load (`contract.check_reward_kwargs`)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rewardfleet.reward_fns import judge, rule_then_judge
from rewardfleet.reward_fns.contract import INJECTABLE_PARAMS, check_reward_kwargs
from rewardfleet.reward_fns.judging.context import JudgeContext
from rewardfleet.reward_fns.judging.judge_settings import JudgeKwargs, JudgeSettings
from rewardfleet.reward_fns.judging.keywords import Keywords, fits
from rewardfleet.reward_fns.judging.rule_gate import RuleGate
from rewardfleet.reward_fns.judging.rule_then_judge import FlawJudgeKwargs, FlawJudgeSettings
from rewardfleet.reward_fns.judging.settings import GenerationSettings

VERL = ["data_source", "solution_str", "ground_truth", "extra_info"]
SERVER = [
    "reward_router_address",
    "router_addresses",
    "http_client",
    "reward_model_tokenizer",
    "prompt",
    "images",
    "uid",
]
JUDGE = ["pool", "model", "method", "template", "timeout_s", "generation", "verdict", "probability", "guards"]
RULE = ["rule", "rule_kwargs", "flaw_penalty", "skip_judge_splits", "on_judge_error"]
FLAW_JUDGE = ["pool", "model", "template", "timeout_s", "generation", "verdict", "guards"]


def test_the_signature_is_the_flat_keywords_and_the_definition_is_verls() -> None:
    params = inspect.signature(judge.compute_score).parameters
    assert list(params) == VERL + SERVER + JUDGE
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in SERVER + JUDGE)
    assert params["extra_info"].default is None and params["timeout_s"].default == 120.0
    rtj = inspect.signature(rule_then_judge.compute_score).parameters
    assert list(rtj) == VERL + SERVER + RULE + FLAW_JUDGE
    assert (rtj["timeout_s"].default, rtj["template"].default) == (300.0, "step_critique")
    # What the functions are written with: verl's four, then **reward_kwargs (was 20 and 23 parameters).
    for fn in (judge.compute_score, rule_then_judge.compute_score):
        code = fn.__code__
        assert code.co_argcount == 4 and code.co_kwonlyargcount == 0
        assert code.co_flags & inspect.CO_VARKEYWORDS


def test_the_server_injects_what_the_functions_declared() -> None:
    """Every name the gateway injects by parameter name, but `messages`, is still declared (so passed)."""
    for fn in (judge.compute_score, rule_then_judge.compute_score):
        declared = set(inspect.signature(fn).parameters) & set(INJECTABLE_PARAMS)
        assert declared == set(INJECTABLE_PARAMS) - {"messages"}


@pytest.mark.parametrize(
    ("fn", "kwargs", "needle"),
    [
        (
            judge.compute_score,
            {"timeot_s": 5},
            r"\['timeot_s'\] are not parameters.*did you mean 'timeout_s'",
        ),
        (judge.compute_score, {"flaw_penalty": 1.0}, r"\['flaw_penalty'\] are not parameters"),
        (
            judge.compute_score,
            {"max_tokens": 64},
            r"\['max_tokens'\] are not .*did you mean 'generation.max_tokens'",
        ),
        (judge.compute_score, {"rubric": "Be strict."}, r"did you mean 'verdict.rubric'"),
        (rule_then_judge.compute_score, {"max_answer_chars": 9}, r"did you mean 'guards.max_answer_chars'"),
        (
            judge.compute_score,
            {"timeout_s": "soon"},
            r"reward_kwargs\.timeout_s: 'soon' is not a valid value",
        ),
        (judge.compute_score, {"pool": 3}, r"reward_kwargs\.pool: 3 is not a valid value \(expected str\)"),
        (judge.compute_score, {"method": None}, r"reward_kwargs\.method: None is not a valid value"),
        (
            judge.compute_score,
            {"generation": [64]},
            r"reward_kwargs\.generation: \[64\] is not a valid value",
        ),
        (judge.compute_score, {"guards": "off"}, r"reward_kwargs\.guards: 'off' is not a valid value"),
        (rule_then_judge.compute_score, {"method": "verdict"}, r"\['method'\] are not parameters"),
        (rule_then_judge.compute_score, {"flaw_penalty": True}, r"flaw_penalty: True is not a valid value"),
        (rule_then_judge.compute_score, {"skip_judge_splits": "test"}, r"skip_judge_splits: 'test' is not"),
        (rule_then_judge.compute_score, {"skip_judge_splits": [1]}, r"skip_judge_splits: \[1\] is not"),
        (rule_then_judge.compute_score, {"rule_kwargs": ["x"]}, r"rule_kwargs: \['x'\] is not a valid value"),
        (rule_then_judge.compute_score, {"template": None}, r"template: None is not a valid value"),
    ],
)
def test_load_time_check_names_the_key_or_the_field(fn: Any, kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        check_reward_kwargs(fn, kwargs)
    module = judge if fn is judge.compute_score else rule_then_judge
    with pytest.raises(ValueError, match=needle):
        module.startup_check(kwargs)


def test_good_kwargs_pass_the_load_time_check() -> None:
    check_reward_kwargs(judge.compute_score, {"pool": "p", "timeout_s": 5, "generation": {"max_tokens": 8}})
    check_reward_kwargs(judge.compute_score, {"generation": GenerationSettings(64), "guards": False})
    check_reward_kwargs(
        rule_then_judge.compute_score,
        {"rule": "math", "rule_kwargs": {}, "skip_judge_splits": ("test", "val"), "flaw_penalty": 1},
    )


@pytest.mark.parametrize(
    ("module", "kwargs", "needle"),
    [
        (judge, {"timeout_s": 0}, "timeout_s must be > 0"),
        (judge, {"timeout_s": float("nan")}, "timeout_s must be > 0"),
        (rule_then_judge, {"timeout_s": -1.0}, "timeout_s must be > 0"),
        (rule_then_judge, {"on_judge_error": "ignore"}, "on_judge_error must be 'raise' or 'rule'"),
        (rule_then_judge, {"template": "pairwise"}, "step_index or binary template"),
    ],
)
def test_values_checked_together_are_refused_at_start_up(module: Any, kwargs: dict, needle: str) -> None:
    with pytest.raises(module.JudgeConfigError if module is judge else ValueError, match=needle):
        module.startup_check(kwargs)


async def test_the_call_refuses_an_unknown_keyword_as_python_would() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeot_s'"):
        await judge.compute_score("x", "y", "z", None, timeot_s=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'method'"):
        await rule_then_judge.compute_score("x", "Answer: 1", "1", method="verdict")
    with pytest.raises(judge.JudgeConfigError, match=r"^timeout_s: 'soon' is not a valid value"):
        await judge.compute_score("x", "y", "z", None, timeout_s="soon")


async def test_keywords_reach_the_settings_objects() -> None:
    """No network: a guarded answer is scored from the settings alone (judge: the guards' score and the pool;
    rule_then_judge: the rule's score less flaw_penalty, and a split it skips)."""
    guarded = await judge.compute_score(
        "x", "", "42", None, reward_router_address="h:1", pool="mine", guards={"score": 0.25}
    )
    assert (guarded["score"], guarded["guard"], guarded["judge_pool"]) == (0.25, "empty", "mine")
    long_answer = "x" * 64 + "\nAnswer: 42"
    kwargs = {"reward_router_address": "h:1", "guards": {"max_answer_chars": 16}, "flaw_penalty": 0.5}
    flawed = await rule_then_judge.compute_score("math_dapo", long_answer, "42", {}, **kwargs)
    assert (flawed["score"], flawed["guard"], flawed["is_flawed"]) == (0.5, "too_long", True)
    skipped = await rule_then_judge.compute_score(
        "math_dapo", long_answer, "42", {"split": "val"}, **kwargs, skip_judge_splits=["val"]
    )
    assert (skipped["score"], skipped["guard"], skipped["judge_called"]) == (1.0, "", False)


def test_settings_are_built_from_the_groups() -> None:
    settings = JudgeSettings.build(JudgeKwargs(method="answer_match", generation={"max_tokens": 8}))
    assert (settings.method, settings.template.name, settings.generation.max_tokens) == (
        "answer_match",
        "correctness",
        8,
    )
    flaw = FlawJudgeSettings.build(FlawJudgeKwargs(generation={"temperature": 0.5}))
    assert (flaw.generation.max_tokens, flaw.generation.temperature, flaw.verdict.reasoning_chars) == (
        4096,
        0.5,
        2000,
    )
    assert RuleGate().asks_judge(True, {"split": "train"}) and not RuleGate().asks_judge(
        True, {"split": "test"}
    )
    assert not RuleGate().asks_judge(False, None)


def test_fits() -> None:
    assert fits(1, float) and fits(1.5, float) and not fits(True, float) and not fits("1", float)
    assert fits(1, int) and not fits(True, int) and not fits(1.0, int) and fits(True, bool)
    assert fits(None, str | None) and not fits(None, str)
    assert fits({}, Mapping[str, Any]) and not fits([], Mapping[str, Any])
    assert fits(["a"], Sequence[str]) and fits(("a",), Sequence[str])
    assert not fits("a", Sequence[str]) and not fits([1], Sequence[str])
    assert fits(GenerationSettings(), GenerationSettings | Mapping[str, Any] | None)
    assert fits(object(), Any)


def test_a_declaration_needs_defaults_distinct_names_and_var_kwargs() -> None:
    with pytest.raises(TypeError, match="in two groups"):
        Keywords(JudgeContext, JudgeKwargs, FlawJudgeKwargs)

    def no_kwargs(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        return 0.0

    with pytest.raises(TypeError, match=r"must take \*\*kwargs"):
        Keywords(JudgeContext).declare(no_kwargs)


def test_plain_functions_are_checked_by_their_parameters() -> None:
    def plain(
        data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, *, k: int = 1
    ) -> float:
        return 0.0

    def open_kwargs(data_source: str, solution_str: str, ground_truth: Any, **kwargs: Any) -> float:
        return 0.0

    check_reward_kwargs(plain, {"k": "not checked: a plain function declares no types"})
    with pytest.raises(ValueError, match=r"reward_kwargs \['kk'\] are not parameters of the function"):
        check_reward_kwargs(plain, {"kk": 1})
    check_reward_kwargs(open_kwargs, {"anything": 1})
