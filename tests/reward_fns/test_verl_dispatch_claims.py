"""Every data_source name verl 0.9.1's `default_compute_score` scores is claimed by exactly one built-in,
the one that scores it as verl does (names read from verl's own source)."""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from types import ModuleType

import pytest

from rewardfleet import reward_fns
from tests.reward_fns import verl_reference

# verl's scorer for each name -> our built-in of the same semantics.
EXPECTED_OWNER = {
    "openai/gsm8k": "gsm8k",
    "lighteval/MATH": "math",
    "DigitalLearningGmbH/MATH-lighteval": "math",
    "HuggingFaceH4/MATH-500": "math",
    **dict.fromkeys(("math_dapo", "math", "math_dapo_reasoning", "aime", "aime2024"), "math_dapo"),
    **dict.fromkeys(("codecontests", "apps", "codeforces", "taco"), "code"),
    "hiyouga/geometry3k": "geo3k",
}


def _builtins() -> list[ModuleType]:
    modules = []
    for info in pkgutil.iter_modules(reward_fns.__path__):
        if not info.name.startswith("_") and not info.ispkg:
            modules.append(importlib.import_module(f"rewardfleet.reward_fns.{info.name}"))
    return modules


def _owners(data_source: str) -> list[str]:
    return [
        m.__name__.removeprefix(f"{reward_fns.__name__}.")
        for m in _builtins()
        if any(fnmatch.fnmatchcase(data_source, claim) for claim in getattr(m, "DATA_SOURCES", ()))
    ]


def _verl_names() -> list[str]:
    exact, prefixes = verl_reference.dispatch_names()
    return sorted(exact | {p for p in prefixes} | {f"{p}_2025" for p in prefixes})


def test_reads_every_verl_scorer_family() -> None:
    names = _verl_names()
    assert {"openai/gsm8k", "apps", "taco", "hiyouga/geometry3k", "searchR1_nq", "numina_olympiads"} <= set(
        names
    )
    assert "aime_2025" in names


@pytest.mark.parametrize("data_source", _verl_names())
def test_each_verl_name_has_exactly_one_owner(data_source: str) -> None:
    owners = _owners(data_source)
    expected = EXPECTED_OWNER.get(data_source)
    if expected is None:
        expected = (
            "search_r1"
            if data_source.startswith("searchR1_")
            else "prime_math"
            if data_source.startswith("numina_")
            else "math_dapo"
            if data_source.startswith("aime")
            else None
        )
    assert owners == [expected], f"{data_source!r}: {owners}"
