"""DAPO's overlong penalty, as a helper to compose with any reward function (not a reward function).

With maximum response length M, buffer length L, factor f and valid response length n (in tokens),

    penalty = min(-(n - (M - L)) / L * f, 0)

so responses up to M - L tokens are not penalised and the penalty grows linearly to -f at n = M.
verl's DAPO reward manager adds it to the score the same way.

The valid length is what verl uses: the number of generated response tokens (padding excluded).
The gateway only sees text, so `with_overlong_penalty` reads it from `extra_info[length_key]`
(default key `valid_response_length`, which the trainer side should send), and only when that key is
absent counts tokens of the response with `count_tokens` (e.g. `tokenizer_counter(tokenizer)` with the
policy's tokenizer). With neither it raises `ValueError` rather than guess.

Usage in a reward file::

    from rewardfleet.reward_fns import math_dapo
    from rewardfleet.reward_fns.overlong import with_overlong_penalty

    compute_score = with_overlong_penalty(
        math_dapo.compute_score, max_response_length=20480, overlong_buffer_len=4096, penalty_factor=1.0
    )
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

__all__ = ["apply_overlong_penalty", "overlong_penalty", "tokenizer_counter", "with_overlong_penalty"]


def overlong_penalty(
    valid_response_length: int, max_response_length: int, overlong_buffer_len: int, penalty_factor: float
) -> float:
    """`min(-(n - (M - L)) / L * f, 0)`: 0 up to M - L tokens, then down to -f at M tokens."""
    if overlong_buffer_len <= 0:
        raise ValueError(f"overlong_buffer_len must be positive, got {overlong_buffer_len}")
    if max_response_length < overlong_buffer_len:
        raise ValueError(
            f"max_response_length ({max_response_length}) must be at least overlong_buffer_len "
            f"({overlong_buffer_len})"
        )
    if valid_response_length < 0:
        raise ValueError(f"valid_response_length must be >= 0, got {valid_response_length}")
    exceed = valid_response_length - (max_response_length - overlong_buffer_len)
    return float(min(-exceed / overlong_buffer_len * penalty_factor, 0))


def apply_overlong_penalty(result: Any, penalty: float) -> dict[str, Any]:
    """Add `penalty` to a reward result (number, dict with "score", or tuple led by the score).

    The answer is a dict: the penalised "score", the original extras, `overlong_reward` (the penalty)
    and `overlong` (whether it was negative) — the extra keys verl's DAPO manager logs.
    """
    if isinstance(result, Mapping):
        if "score" not in result:
            raise ValueError("reward result dict has no 'score' key")
        out = dict(result)
        score = result["score"]
    elif isinstance(result, tuple):
        if not result:
            raise ValueError("reward result is an empty tuple")
        out, score = {}, result[0]
    else:
        out, score = {}, result
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise TypeError(f"reward score must be a number to add a penalty to, got {type(score).__name__}")
    out["score"] = float(score) + penalty
    out["overlong_reward"] = penalty
    out["overlong"] = penalty < 0
    return out


class _Encodes(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


def tokenizer_counter(tokenizer: _Encodes) -> Callable[[str], int]:
    """Count a response's tokens with a Hugging Face tokenizer (no special tokens added)."""

    def count_tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return count_tokens


def _valid_length(
    solution_str: str,
    extra_info: Mapping[str, Any] | None,
    length_key: str,
    count_tokens: Callable[[str], int] | None,
) -> int:
    if extra_info is not None and length_key in extra_info:
        length = extra_info[length_key]
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"extra_info[{length_key!r}] must be an int, got {type(length).__name__}")
        return length
    if count_tokens is not None:
        return count_tokens(solution_str)
    raise ValueError(
        f"overlong penalty needs the response length: send extra_info[{length_key!r}] (response tokens) "
        "or give with_overlong_penalty a count_tokens function"
    )


def with_overlong_penalty(
    compute_score: Callable[..., Any],
    *,
    max_response_length: int,
    overlong_buffer_len: int,
    penalty_factor: float = 1.0,
    length_key: str = "valid_response_length",
    count_tokens: Callable[[str], int] | None = None,
) -> Callable[..., Any]:
    """`compute_score` with the DAPO overlong penalty added to its score (sync or async alike).

    The wrapper keeps `compute_score`'s signature (via `functools.wraps`), so extra arguments the
    gateway injects by parameter name are passed through unchanged.
    """
    # Validate the configuration now, not on the first sample.
    overlong_penalty(0, max_response_length, overlong_buffer_len, penalty_factor)

    def penalise(result: Any, solution_str: str, extra_info: Mapping[str, Any] | None) -> dict[str, Any]:
        length = _valid_length(solution_str, extra_info, length_key, count_tokens)
        penalty = overlong_penalty(length, max_response_length, overlong_buffer_len, penalty_factor)
        return apply_overlong_penalty(result, penalty)

    if inspect.iscoroutinefunction(compute_score):
        score_async: Callable[..., Awaitable[Any]] = compute_score

        @functools.wraps(compute_score)
        async def penalised_async(
            data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
        ) -> dict[str, Any]:
            result = await score_async(
                data_source=data_source,
                solution_str=solution_str,
                ground_truth=ground_truth,
                extra_info=extra_info,
                **kwargs,
            )
            return penalise(result, solution_str, extra_info)

        return penalised_async

    @functools.wraps(compute_score)
    def penalised(
        data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        result = compute_score(
            data_source=data_source,
            solution_str=solution_str,
            ground_truth=ground_truth,
            extra_info=extra_info,
            **kwargs,
        )
        return penalise(result, solution_str, extra_info)

    return penalised
