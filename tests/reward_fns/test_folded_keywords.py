"""The model-backed built-ins folded into settings objects (issue 38; `judging/keywords.py`): each is written
`compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)` as verl calls it,
its public signature (names, order, kinds, defaults, annotations) is the one it had as a flat function, the
names the gateway injects are still declared, and a misspelt or mistyped key is refused naming it, at load
(`contract.check_reward_kwargs`, the module's `startup_check`) and at the call."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

from rewardfleet.reward_fns import image_text_score, likelihood, prm, reward_model, rubric, step_judge
from rewardfleet.reward_fns.contract import INJECTABLE_PARAMS, check_reward_kwargs
from rewardfleet.reward_fns.judging.errors import JudgeConfigError

_VERL = (
    "data_source: 'str', solution_str: 'str', ground_truth: 'Any', "
    "extra_info: 'dict[str, Any] | None' = None, *, "
)
_VERL_OPTIONAL_TRUTH = _VERL.replace("ground_truth: 'Any'", "ground_truth: 'Any' = None")
_RETURNS = ") -> 'dict[str, Any]'"

# str(inspect.signature(compute_score)) of each function before it was folded (main at b854c1d).
SIGNATURES: dict[ModuleType, str] = {
    rubric: "("
    + _VERL
    + "router_addresses: 'Mapping[str, str] | None' = None, reward_router_address: 'str | None' = None, "
    "http_client: 'aiohttp.ClientSession | None' = None, prompt: 'Any' = None, pool: 'str' = 'judge', "
    "model: 'str' = 'default', timeout_s: 'float' = 120.0, temperature: 'float' = 0.0, "
    "criteria_per_call: 'int' = 1, max_concurrent_calls: 'int' = 8, reasons: 'bool' = False, "
    "reason_chars: 'int' = 120, essential_gate: 'bool' = True, rubric_set: 'str | None' = None, "
    "rubric_name: 'str | None' = None, max_criteria: 'int' = 32, max_criterion_chars: 'int' = 1000, "
    "guards: 'GuardSettings | Mapping[str, Any] | bool | None' = None" + _RETURNS,
    step_judge: "("
    + _VERL
    + "reward_router_address: 'str | None' = None, router_addresses: 'Mapping[str, str] | None' = None, "
    "http_client: 'aiohttp.ClientSession | None' = None, prompt: 'Any' = None, pool: 'str' = 'judge', "
    "model: 'str' = 'default', step_rule: 'str' = 'blank_line', max_steps: 'int' = 64, "
    "aggregate_by: 'str' = 'min', max_tokens: 'int' = 1024, temperature: 'float' = 0.0, "
    "reasoning_chars: 'int' = 400, constrain: 'bool' = True, timeout_s: 'float' = 120.0" + _RETURNS,
    likelihood: "("
    + _VERL
    + "router_addresses: 'Mapping[str, str] | None' = None, reward_router_address: 'str | None' = None, "
    "http_client: 'aiohttp.ClientSession | None' = None, reward_model_tokenizer: 'Any' = None, "
    "prompt: 'Any' = None, pool: 'str' = 'judge', aggregate: 'str' = 'mean_prob', debias: 'str' = 'none', "
    "answer_prefix: 'str' = 'The answer is ', max_reference_tokens: 'int' = 256, timeout_s: 'float' = 120.0, "
    "guards: 'GuardSettings | Mapping[str, Any] | bool | None' = None" + _RETURNS,
    prm: "("
    + _VERL_OPTIONAL_TRUTH
    + "router_addresses: 'Mapping[str, str] | None' = None, http_client: 'aiohttp.ClientSession | None' = "
    "None, prompt: 'Any' = None, pool: 'str' = 'prm', model: 'str | None' = None, step_tag: 'str' = "
    "'<extra_0>', step_separator: 'str' = '\\n\\n', aggregate: 'str' = 'min', max_steps: 'int' = 256, "
    "positive_label: 'int' = 1, system_prompt: 'str | None' = None, timeout_s: 'float' = 60.0" + _RETURNS,
    image_text_score: "("
    + _VERL_OPTIONAL_TRUTH
    + "images: 'Sequence[Any] | None' = None, reward_router_address: 'str | None' = None, "
    "router_addresses: 'Mapping[str, str] | None' = None, http_client: 'aiohttp.ClientSession | None' = "
    "None, prompt: 'Any' = None, pool: 'str' = 'image_reward_model', model: 'str' = 'default', text: 'str' "
    "= 'prompt', rescale: 'str' = 'none', logit_scale: 'float | None' = None, timeout_s: 'float' = 30.0"
    + _RETURNS,
    reward_model: "("
    + _VERL_OPTIONAL_TRUTH
    + "reward_router_address: 'str | None' = None, router_addresses: 'Mapping[str, str] | None' = None, "
    "http_client: 'aiohttp.ClientSession | None' = None, reward_model_tokenizer: 'Any' = None, "
    "prompt: 'Any' = None, pool: 'str' = 'reward_model', model: 'str | None' = None, "
    "policy_eos_token: 'str | None' = None, timeout_s: 'float' = 60.0" + _RETURNS,
}

# The names the gateway injects that each function declared before (so is still passed).
INJECTED: dict[ModuleType, set[str]] = {
    rubric: {"router_addresses", "reward_router_address", "http_client", "prompt"},
    step_judge: {"router_addresses", "reward_router_address", "http_client", "prompt"},
    likelihood: {
        "router_addresses",
        "reward_router_address",
        "http_client",
        "prompt",
        "reward_model_tokenizer",
    },
    prm: {"router_addresses", "http_client", "prompt"},
    image_text_score: {"router_addresses", "reward_router_address", "http_client", "prompt", "images"},
    reward_model: {
        "router_addresses",
        "reward_router_address",
        "http_client",
        "prompt",
        "reward_model_tokenizer",
    },
}

MODULES = list(SIGNATURES)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_the_public_signature_is_unchanged_and_the_definition_is_verls(module: ModuleType) -> None:
    fn = module.compute_score
    signature = inspect.signature(fn)
    assert str(signature) == SIGNATURES[module]
    params = list(signature.parameters.values())
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params[:4])
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[4:])
    assert set(signature.parameters) & set(INJECTABLE_PARAMS) == INJECTED[module]
    code = fn.__code__  # what it is written with: verl's four and **reward_kwargs
    assert (code.co_argcount, code.co_kwonlyargcount) == (4, 0) and code.co_flags & inspect.CO_VARKEYWORDS
    assert inspect.iscoroutinefunction(fn)


@pytest.mark.parametrize(
    ("module", "kwargs", "needle"),
    [
        (
            rubric,
            {"criteria_per_cal": 2},
            r"\['criteria_per_cal'\] are not .*did you mean 'criteria_per_call'",
        ),
        (rubric, {"max_tokens": 64}, r"\['max_tokens'\] are not parameters"),
        (rubric, {"max_answer_chars": 9}, r"did you mean 'guards.max_answer_chars'"),
        (rubric, {"reasons": "yes"}, r"reward_kwargs\.reasons: 'yes' is not a valid value \(expected bool\)"),
        (rubric, {"criteria_per_call": 1.5}, r"reward_kwargs\.criteria_per_call: 1.5 is not a valid value"),
        (rubric, {"timeout_s": "soon"}, r"reward_kwargs\.timeout_s: 'soon' is not a valid value"),
        (rubric, {"guards": "off"}, r"reward_kwargs\.guards: 'off' is not a valid value"),
        (step_judge, {"max_step": 8}, r"\['max_step'\] are not .*did you mean 'max_steps'"),
        (
            step_judge,
            {"max_steps": "64"},
            r"reward_kwargs\.max_steps: '64' is not a valid value \(expected int\)",
        ),
        (step_judge, {"constrain": "no"}, r"reward_kwargs\.constrain: 'no' is not a valid value"),
        (likelihood, {"debais": "baseline"}, r"\['debais'\] are not .*did you mean 'debias'"),
        (likelihood, {"max_reference_tokens": 2.5}, r"reward_kwargs\.max_reference_tokens: 2.5 is not"),
        (likelihood, {"pool": None}, r"reward_kwargs\.pool: None is not a valid value \(expected str\)"),
        (prm, {"step_tags": "<s>"}, r"\['step_tags'\] are not .*did you mean 'step_tag'"),
        (prm, {"reward_router_address": "h:1"}, r"\['reward_router_address'\] are not parameters"),
        (prm, {"positive_label": True}, r"reward_kwargs\.positive_label: True is not a valid value"),
        (image_text_score, {"rescal": "linear"}, r"\['rescal'\] are not .*did you mean 'rescale'"),
        (image_text_score, {"logit_scale": "100"}, r"reward_kwargs\.logit_scale: '100' is not a valid value"),
        (reward_model, {"policy_eos": "</s>"}, r"\['policy_eos'\] are not .*did you mean 'policy_eos_token'"),
        (reward_model, {"timeout_s": [60]}, r"reward_kwargs\.timeout_s: \[60\] is not a valid value"),
    ],
)
def test_a_bad_key_or_type_is_refused_at_load_naming_it(
    module: ModuleType, kwargs: dict, needle: str
) -> None:
    with pytest.raises(ValueError, match=needle):
        check_reward_kwargs(module.compute_score, kwargs)
    if hasattr(module, "startup_check"):
        with pytest.raises(ValueError, match=needle):
            module.startup_check(kwargs)


@pytest.mark.parametrize(
    ("module", "kwargs"),
    [
        (rubric, {"pool": "judge", "timeout_s": 5, "reasons": True, "guards": {"max_answer_chars": 100}}),
        (rubric, {"criteria_per_call": 0, "max_criteria": 4, "guards": False}),
        (step_judge, {"step_rule": "line", "max_steps": 8, "temperature": 0, "constrain": False}),
        (likelihood, {"aggregate": "geometric_mean", "debias": "baseline", "timeout_s": 30}),
        (prm, {"model": None, "max_steps": 8, "positive_label": 0, "system_prompt": "Think."}),
        (image_text_score, {"rescale": "linear", "text": "response", "timeout_s": 1}),
        (reward_model, {"model": "rm", "policy_eos_token": "</s>"}),
    ],
)
def test_good_kwargs_pass_at_load(module: ModuleType, kwargs: dict) -> None:
    check_reward_kwargs(module.compute_score, kwargs)
    if hasattr(module, "startup_check"):
        module.startup_check(kwargs)


def test_values_checked_together_still_fail_at_start_up() -> None:
    with pytest.raises(likelihood.LikelihoodConfigError, match="aggregate must be one of"):
        likelihood.startup_check({"aggregate": "median"})
    with pytest.raises(JudgeConfigError, match="rubric_name needs rubric_set"):
        rubric.startup_check({"rubric_name": "x"})
    with pytest.raises(JudgeConfigError, match="criteria_per_call must be an integer >= 0"):
        rubric.startup_check({"criteria_per_call": -1})


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
async def test_the_call_refuses_an_unknown_keyword_or_a_bad_type(module: ModuleType) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeot_s'"):
        await module.compute_score("x", "y", "z", None, timeot_s=5)
    with pytest.raises(JudgeConfigError, match=r"^timeout_s: 'soon' is not a valid value"):
        await module.compute_score("x", "y", "z", None, timeout_s="soon")


async def test_keywords_reach_the_settings_objects() -> None:
    """No network: paths decided by the settings alone (a guarded answer, an empty response, a setting or
    an injected value the body refuses) show each keyword reached its object."""
    guarded = await rubric.compute_score(
        "x", "", "42", None, reward_router_address="h:1", pool="mine", guards={"score": 0.25}
    )
    assert (guarded["score"], guarded["guard"], guarded["judge_pool"]) == (0.25, "empty", "mine")
    empty = await step_judge.compute_score("x", " \n\n ", "42", None, pool="steps")
    assert (empty["judge_pool"], empty["judge_verdict_source"]) == ("steps", "empty")
    with pytest.raises(ValueError, match="unknown aggregate 'median'"):
        await step_judge.compute_score("x", "a", "42", None, aggregate_by="median")
    liked = await likelihood.compute_score(
        "x", "", "42", None, reward_router_address="h:1", reward_model_tokenizer=object(), prompt="Why?",
        guards={"score": 0.5},
    )  # fmt: skip
    assert (liked["score"], liked["guard"]) == (0.5, "empty")
    with pytest.raises(prm.PrmInputError, match="positive_label must be >= 0, not -1"):
        await prm.compute_score("x", "a", positive_label=-1)
    with pytest.raises(prm.PrmInputError, match="a PRM pool must be configured"):
        await prm.compute_score("x", "a", prompt="Why?", router_addresses={"other": "h:1"}, pool="mine")
    with pytest.raises(image_text_score.ImageRewardInputError, match="rescale must be"):
        await image_text_score.compute_score("x", "a", rescale="log")
    with pytest.raises(image_text_score.ImageRewardInputError, match="no image for this sample"):
        await image_text_score.compute_score("x", "a", text="response")
    with pytest.raises(reward_model.RewardModelInputError, match="needs reward_model_tokenizer"):
        await reward_model.compute_score("x", "a", prompt="Why?")


def test_the_settings_groups_build_with_the_defaults() -> None:
    settings = rubric.RubricSettings.build(vars(rubric.RubricKwargs(max_criteria=4)))
    assert (settings.limits.max_criteria, settings.criteria_per_call, settings.guards.score) == (4, 1, 0.0)
    assert prm.PrmSettings().step_tag == prm.QWEN_PRM_STEP_TAG
    assert step_judge.StepJudgeSettings().aggregate_by == "min"
    assert likelihood.LikelihoodSettings().answer_prefix == "The answer is "
