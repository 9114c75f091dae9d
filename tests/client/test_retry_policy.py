"""The delay arithmetic of `RetryPolicy` (the `Retry-After` parser is tests/common/test_retry_after.py)."""

from __future__ import annotations

import random

import pytest

from rewardfleet.services.client import RetryPolicy


def test_full_jitter_stays_under_the_exponential_ceiling_and_the_cap() -> None:
    policy = RetryPolicy(initial_backoff_s=0.5, multiplier=2.0, max_backoff_s=3.0)
    rng = random.Random(7)
    for retry_index, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 3.0), (10, 3.0)]:
        delays = [policy.backoff_s(retry_index, rng) for _ in range(500)]
        assert min(delays) >= 0.0 and max(delays) <= ceiling
        # full jitter uses the whole range, not a fixed value near the ceiling
        assert min(delays) < 0.2 * ceiling and max(delays) > 0.8 * ceiling


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    policy = RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.02, max_retry_after_s=5.0)
    rng = random.Random(1)
    assert 2.0 <= policy.delay_s(0, 2.0, rng) <= 2.0 + 0.01
    assert 5.0 <= policy.delay_s(0, 3600.0, rng) <= 5.0 + 0.01
    assert policy.delay_s(0, None, rng) <= 0.01


@pytest.mark.parametrize(
    "kwargs", [{"max_attempts": 0}, {"initial_backoff_s": -1.0}, {"multiplier": 0.5}, {"max_backoff_s": -2.0}]
)
def test_invalid_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
