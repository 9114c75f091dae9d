"""The `prm` built-in's pure parts: step splitting, the aggregates, the chat it sends, and how it reads
vLLM's PoolingResponse (every unusable answer is a typed error, never a partial score)."""

from __future__ import annotations

import asyncio
import math

import pytest

from rewardfleet.reward_fns.judging.steps import aggregate, split_steps
from rewardfleet.reward_fns.prm import (
    PrmCallError,
    PrmInputError,
    compute_score,
    step_rewards,
    tagged_chat,
)


def test_split_drops_empty_parts_and_strips() -> None:
    """prm splits by reward_fns/judging/steps.py's `separator:<SEP>` rule."""
    assert split_steps("a\n\n\n\n b \n\n", "separator:\n\n") == ["a", "b"]
    assert split_steps("one step", "separator:\n\n") == ["one step"]
    assert split_steps("x|y", "separator:|") == ["x", "y"]


@pytest.mark.parametrize(
    ("how", "want"), [("min", 0.2), ("mean", 0.5), ("last", 0.5), ("product", 0.8 * 0.2 * 0.5)]
)
def test_aggregates(how: str, want: float) -> None:
    assert aggregate([0.8, 0.2, 0.5], how) == pytest.approx(want)


def test_unknown_aggregate_is_an_input_error() -> None:
    with pytest.raises(PrmInputError, match="aggregate"):
        asyncio.run(
            compute_score("d", "a\n\nb", prompt="q", router_addresses={"prm": "h:1"}, aggregate="median")
        )


def test_chat_places_one_tag_after_each_step() -> None:
    chat = tagged_chat(["s1", "s<t>2"], [{"role": "user", "content": "q<t>"}], "<t>", "sys")
    assert chat == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "s1<t>s2<t>"},
    ]


def _answer(rows: object) -> dict[str, object]:
    return {"object": "list", "data": [{"index": 0, "object": "pooling", "data": rows}]}


def test_reads_the_positive_label_of_each_step() -> None:
    assert step_rewards(_answer([[0.1, 0.9], [0.6, 0.4]]), 2, 1, "u") == [0.9, 0.4]
    assert step_rewards(_answer([[0.1, 0.9], [0.6, 0.4]]), 2, 0, "u") == [0.1, 0.6]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (_answer([[0.1, 0.9]]), "expected 2 step rows"),
        (_answer([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]]), "expected 2 step rows"),
        (_answer([[0.1], [0.2]]), "at least 2 label probabilities"),
        (_answer([[0.1, math.nan], [0.2, 0.8]]), "non-finite"),
        (_answer([[0.1, "x"], [0.2, 0.8]]), "not a number"),
        ({"embedding": [1.0]}, "PoolingResponse"),
    ],
)
def test_unusable_answers_are_typed_errors(body: object, needle: str) -> None:
    with pytest.raises(PrmCallError, match=needle) as err:
        step_rewards(body, 2, 1, "http://h/pooling")
    assert err.value.kind == "bad_response"
