from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from rewardfleet.reward_fns import math_dapo
from rewardfleet.reward_fns.overlong import (
    apply_overlong_penalty,
    overlong_penalty,
    tokenizer_counter,
    with_overlong_penalty,
)


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (0, 0.0),
        (16, 0.0),  # M - L = 16: no penalty up to here
        (17, -0.25),
        (18, -0.5),
        (20, -1.0),  # at M: the full factor
        (24, -2.0),  # verl does not clamp beyond M
    ],
)
def test_penalty_values(length: int, expected: float) -> None:
    assert (
        overlong_penalty(length, max_response_length=20, overlong_buffer_len=4, penalty_factor=1.0)
        == expected
    )


def test_penalty_factor_scales() -> None:
    assert overlong_penalty(18, 20, 4, 0.5) == -0.25


@pytest.mark.parametrize(("max_len", "buffer_len", "length"), [(20, 0, 1), (3, 4, 1), (20, 4, -1)])
def test_bad_configuration_is_an_error(max_len: int, buffer_len: int, length: int) -> None:
    with pytest.raises(ValueError):
        overlong_penalty(length, max_len, buffer_len, 1.0)


def test_apply_to_each_result_shape() -> None:
    assert apply_overlong_penalty(1.0, -0.5) == {"score": 0.5, "overlong_reward": -0.5, "overlong": True}
    assert apply_overlong_penalty(1, 0.0) == {"score": 1.0, "overlong_reward": 0.0, "overlong": False}
    assert apply_overlong_penalty((1.0, "why"), -0.5)["score"] == 0.5
    got = apply_overlong_penalty({"score": -1.0, "acc": False, "pred": "3"}, -0.25)
    assert got == {"score": -1.25, "acc": False, "pred": "3", "overlong_reward": -0.25, "overlong": True}
    with pytest.raises(ValueError, match="score"):
        apply_overlong_penalty({"acc": True}, -0.5)
    with pytest.raises(TypeError):
        apply_overlong_penalty({"score": None}, -0.5)


def test_wrapping_math_dapo_with_the_length_in_extra_info() -> None:
    scored = with_overlong_penalty(math_dapo.compute_score, max_response_length=20, overlong_buffer_len=4)
    got = scored(
        data_source="math_dapo",
        solution_str="Answer: 7",
        ground_truth="7",
        extra_info={"valid_response_length": 18},
    )
    assert got == {"score": 0.5, "acc": True, "pred": "7", "overlong_reward": -0.5, "overlong": True}
    # The wrapper keeps the wrapped function's signature, so keyword options still pass through.
    assert inspect.signature(scored) == inspect.signature(math_dapo.compute_score)
    boxed = scored(
        data_source="math_dapo",
        solution_str="\\boxed{7}",
        ground_truth="7",
        extra_info={"valid_response_length": 3},
        boxed_fallback=False,
    )
    assert boxed["score"] == -1.0


def test_length_from_a_token_counter_or_an_error() -> None:
    class WordTokenizer:
        def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
            return [0] * len(text.split()) + ([1] if add_special_tokens else [])

    def one(**kwargs: Any) -> float:
        return 1.0

    counted = with_overlong_penalty(
        one, max_response_length=4, overlong_buffer_len=2, count_tokens=tokenizer_counter(WordTokenizer())
    )
    got = counted(data_source="d", solution_str="a b c", ground_truth="")
    assert got["overlong_reward"] == -0.5
    # extra_info wins over the counter
    assert (
        counted(
            data_source="d", solution_str="a b c", ground_truth="", extra_info={"valid_response_length": 1}
        )["overlong"]
        is False
    )

    uncounted = with_overlong_penalty(one, max_response_length=4, overlong_buffer_len=2)
    with pytest.raises(ValueError, match="valid_response_length"):
        uncounted(data_source="d", solution_str="a b c", ground_truth="")
    with pytest.raises(TypeError, match="int"):
        uncounted(
            data_source="d", solution_str="", ground_truth="", extra_info={"valid_response_length": "3"}
        )


def test_async_functions_stay_async() -> None:
    async def judge(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None) -> float:
        await asyncio.sleep(0)  # a real await: the wrapped function stays a coroutine
        return 1.0

    scored = with_overlong_penalty(judge, max_response_length=10, overlong_buffer_len=5, penalty_factor=2.0)
    assert inspect.iscoroutinefunction(scored)
    got = asyncio.run(
        scored(data_source="d", solution_str="x", ground_truth="", extra_info={"valid_response_length": 10})
    )
    assert got == {"score": -1.0, "overlong_reward": -2.0, "overlong": True}


def test_configuration_checked_when_wrapping() -> None:
    with pytest.raises(ValueError):
        with_overlong_penalty(math_dapo.compute_score, max_response_length=10, overlong_buffer_len=0)
