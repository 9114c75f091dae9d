"""The rule-based built-ins (and the async `code` built-in) keep the contract the gateway relies on: verl's
keyword call, a float or a dict with "score", well-formed `DATA_SOURCES`, and no two of them claiming the
same data source.

(Other built-ins in `reward_fns/`, such as model-backed ones, have their own tests.)"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
from types import ModuleType

import pytest

from rewardfleet.reward_fns import overlong

# One sample each function can score, with its expected score.
SAMPLES = {
    "gsm8k": ("#### 18", "18", 1.0),
    "math": ("\\boxed{18}", "18", 1.0),
    "math_dapo": ("Answer: 18", "18", 1.0),
    "math_verify": ("\\boxed{18}", "18", 1.0),
    "exact_match": ("18", "18", 1.0),
    "regex_match": ("18", r"\d+", 1.0),
    "format_check": ("<think>r</think> 18", None, 1.0),
    "prime_math": ("So the answer is \\boxed{18}.", "18", 1.0),
    "geo3k": ("<think>r</think> \\boxed{18}", "18", 1.0),
    "search_r1": ("<answer>18</answer>", {"target": ["18"]}, 1.0),
    "instruction_following": ("18", {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [None]}, 1.0),
}
SCORING = {name: importlib.import_module(f"rewardfleet.reward_fns.{name}") for name in SAMPLES}


def test_overlong_is_a_helper_not_a_reward_function() -> None:
    assert not hasattr(overlong, "compute_score")


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_keyword_call_and_result_shape(name: str) -> None:
    module = SCORING[name]
    parameters = inspect.signature(module.compute_score).parameters
    assert list(parameters)[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    assert parameters["extra_info"].default is None
    assert not inspect.iscoroutinefunction(module.compute_score)
    text, truth, expected = SAMPLES[name]
    result = module.compute_score(data_source="any", solution_str=text, ground_truth=truth, extra_info={})
    score = result["score"] if isinstance(result, dict) else result
    assert type(score) is float
    assert score == expected


@pytest.mark.parametrize("name", sorted(SCORING))
def test_data_sources_are_a_tuple_of_strings(name: str) -> None:
    claims = getattr(SCORING[name], "DATA_SOURCES", ())
    assert isinstance(claims, tuple)
    assert all(isinstance(claim, str) and claim for claim in claims)


def _examples(pattern: str) -> list[str]:
    return [pattern, pattern.replace("*", ""), pattern.replace("*", "2024")]


def test_no_data_source_is_claimed_twice() -> None:
    claims: list[tuple[str, ModuleType]] = [
        (claim, module) for module in SCORING.values() for claim in getattr(module, "DATA_SOURCES", ())
    ]
    for claim, owner in claims:
        for example in _examples(claim):
            owners = {m.__name__ for c, m in claims if fnmatch.fnmatchcase(example, c)}
            assert owners == {owner.__name__}, f"{example!r} is claimed by {owners}"


def test_code_is_async_with_verls_keyword_call() -> None:
    from rewardfleet.reward_fns import code

    parameters = inspect.signature(code.compute_score).parameters
    assert list(parameters)[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    assert inspect.iscoroutinefunction(code.compute_score)
    claims = [
        (claim, m.__name__) for m in [*SCORING.values(), code] for claim in getattr(m, "DATA_SOURCES", ())
    ]
    for claim, owner in claims:
        owners = {m for c, m in claims if fnmatch.fnmatchcase(claim, c)}
        assert owners == {owner}, f"{claim!r} is claimed by {owners}"
