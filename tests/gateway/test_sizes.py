"""`sizes.json_size`: the depth it reports is the value's, its size never exceeds the JSON text's length, and
it stops early (but always past the bound) when a bound is passed."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardfleet.services.gateway.limits.input_limits import id_chars
from rewardfleet.services.gateway.sizes import json_size

NO_LIMIT = 1 << 62
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=60,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_depth_exact_and_size_at_most_the_json_length(value: Any) -> None:
    got_depth, size = json_size(value, NO_LIMIT, NO_LIMIT)
    assert got_depth == depth(value)
    assert 1 <= size <= len(json.dumps(value, ensure_ascii=False))


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=6))
def test_bounds_stop_the_walk_but_are_never_missed(value: Any, max_size: int, max_depth: int) -> None:
    true_depth, true_size = json_size(value, NO_LIMIT, NO_LIMIT)
    got_depth, got_size = json_size(value, max_depth, max_size)
    over = true_depth > max_depth or true_size > max_size
    assert (got_depth > max_depth or got_size > max_size) == over
    if not over:
        assert (got_depth, got_size) == (true_depth, true_size)


def test_counts_values_and_characters_not_text() -> None:
    assert json_size("x" * 10, 1, NO_LIMIT) == (0, 11)
    assert json_size({"ab": ["cde", 1, None]}, 5, NO_LIMIT) == (2, 1 + 2 + 1 + 4 + 1 + 1)
    assert json_size([[[]]], 2, NO_LIMIT)[0] == 3  # over max_depth=2: reported, walk stopped
    assert json_size({1: (2, 3)}, 5, NO_LIMIT) == (2, 5)  # non-string keys and tuples (function results)


def test_id_chars_never_renders_a_huge_integer() -> None:
    assert id_chars("abc", 10) == 3
    assert id_chars(12345, 10) == 5
    huge = 10**4000
    assert id_chars(huge, 256) > 256  # estimated from the bit length
    assert id_chars(-(10**300), 256) > 256
