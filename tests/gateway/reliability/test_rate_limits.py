"""RPM/TPM budgets over a sliding minute, and the delay a 429's headers ask for."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from rewardfleet.services.gateway.limits.rate_limits import Budget, parse_duration_s, retry_delay_s
from tests.clock import FakeClock


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5s", 0.5),
        ("soon", None),
        ("", None),
    ],
)
def test_openai_reset_durations(text: str, seconds: float | None) -> None:
    assert parse_duration_s(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_after_wins_then_the_exhausted_reset() -> None:
    assert retry_delay_s({"Retry-After": "3"}) == 3.0
    assert retry_delay_s({"retry-after-ms": "250", "Retry-After": "3"}) == 0.25
    assert retry_delay_s({"Retry-After": formatdate(1_000_010.0, usegmt=True)}, now=1_000_000.0) == 10.0
    headers = {
        "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s",
        "x-ratelimit-remaining-tokens": "5000", "x-ratelimit-reset-tokens": "40s",
    }  # fmt: skip
    assert retry_delay_s(headers) == 2.0  # only the exhausted budget's reset counts
    assert retry_delay_s({"x-ratelimit-reset-tokens": "1m"}) == 60.0
    assert retry_delay_s({}) is None and retry_delay_s({"Retry-After": "tomorrow"}) is None


def test_rpm_waits_for_the_oldest_request_to_leave_the_window() -> None:
    clock = FakeClock()
    budget = Budget(rpm=2, tpm=None, clock=clock)
    assert budget.wait_s() == 0
    budget._requests.extend([clock.now, clock.now + 10])
    clock.now += 10
    assert budget.wait_s() == pytest.approx(50.0)  # the first request leaves the window at +60
    clock.now += 50
    assert budget.wait_s() == 0


def test_tpm_counts_real_usage_until_it_expires() -> None:
    clock = FakeClock()
    budget = Budget(rpm=None, tpm=1000, clock=clock)
    budget.spend_tokens(600)
    clock.now += 20
    budget.spend_tokens(500)  # 1100 in the window: over
    assert budget.wait_s() == pytest.approx(40.0)  # until the 600 leave; then 500 < 1000
    clock.now += 40
    assert budget.wait_s() == 0
    budget.spend_tokens(0)
    assert budget.wait_s() == 0
