"""`Dispatcher` in-process: the precedence of the module docstring, bounded labels, and the 404s. The same
rules through HTTP are tests/gateway/core/test_dispatch_http.py."""

from __future__ import annotations

import dataclasses

import pytest

from rewardfleet.services.gateway.core.dispatch import OTHER_LABEL, Dispatcher
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.errors import Undispatchable, UnknownRewardFunction
from tests.gateway.units import async_function


async def _zero(**kwargs: object) -> float:
    return 0.0


def fn(name: str, *claims: str) -> RewardFunction:
    return dataclasses.replace(async_function(name, _zero), data_sources=claims)


def table(*fns: RewardFunction) -> dict[str, RewardFunction]:
    return {f.name: f for f in fns}


def test_precedence() -> None:
    functions = table(
        fn("builtin_math", "math", "aime*"),
        fn("user_aime", "aime_2024*"),
        fn("fallback"),
        fn("exact"),
    )
    d = Dispatcher(functions, {"math": "exact"}, "fallback")
    assert d.resolve("user_aime", "math")[0].name == "user_aime"  # reward_fn wins over everything
    assert d.resolve(None, "math") == (functions["exact"], "math")  # config dispatch beats a module claim
    assert d.resolve(None, "aime_2024_i") == (functions["user_aime"], "aime_2024*")  # the longest glob
    assert d.resolve(None, "aime_2025") == (functions["builtin_math"], "aime*")
    assert d.resolve(None, "unknown/set") == (functions["fallback"], OTHER_LABEL)  # default, bounded label


def test_later_loaded_function_wins_an_equal_claim() -> None:
    d = Dispatcher(table(fn("builtin", "gsm8k", "gsm*"), fn("user", "gsm8k", "gsm*")), {}, None)
    assert d.resolve(None, "gsm8k")[0].name == "user"
    assert d.resolve(None, "gsm_hard")[0].name == "user"


def test_unknown_names_are_404_listing_what_exists() -> None:
    d = Dispatcher(table(fn("a", "x")), {"y": "missing"}, "missing")  # targets not loaded are ignored
    with pytest.raises(UnknownRewardFunction) as unknown:
        d.resolve("nope", "x")
    assert unknown.value.details == {"available_reward_fns": ["a"], "available_data_sources": ["x"]}
    with pytest.raises(Undispatchable):
        d.resolve(None, "y")


def test_the_memo_of_data_source_names_stays_bounded() -> None:
    d = Dispatcher(table(fn("a", "x*")), {}, "a")
    for i in range(5000):
        assert d.resolve(None, f"name-{i}")[1] == OTHER_LABEL
    assert len(d._memo) == 4096
