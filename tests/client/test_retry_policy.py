"""The delay arithmetic of `RetryPolicy` and the `Retry-After` parser."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from rewardfleet.services.client import RetryPolicy
from rewardfleet.services.client._retry import parse_retry_after


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
    ("header", "expected"),
    [
        ("3", 3.0),
        (" 1.5 ", 1.5),
        ("0", 0.0),
        ("-4", 0.0),
        ("", None),
        (None, None),
        ("soon", None),
        ("nan", None),
    ],
)
def test_parse_retry_after_seconds(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


def test_parse_retry_after_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    header = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(header, now=now) == pytest.approx(30.0)
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(past, now=now) == 0.0


@pytest.mark.parametrize(
    "kwargs", [{"max_attempts": 0}, {"initial_backoff_s": -1.0}, {"multiplier": 0.5}, {"max_backoff_s": -2.0}]
)
def test_invalid_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
