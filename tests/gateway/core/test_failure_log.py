"""The per-sample failure log: one WARNING per failure, bounded lines in a storm, drops counted."""

from __future__ import annotations

import logging

import pytest

from rewardfleet.services.gateway.core import failure_log
from rewardfleet.services.gateway.core.failure_log import FailureLog
from tests.clock import FakeClock


def fail(failures: FailureLog, fn: str = "boom", uid: str = "u1") -> None:
    failures.sample_failed(
        reward_fn=fn,
        data_source="openai/gsm8k",
        status="error",
        error_type="ValueError",
        message="bad",
        uid=uid,
    )


def test_one_warning_names_function_source_error_and_uid(caplog: pytest.LogCaptureFixture) -> None:
    failures = FailureLog(clock=FakeClock(0.0))
    with caplog.at_level(logging.WARNING, logger=failure_log.__name__):
        fail(failures)
        failures.sample_failed(
            reward_fn="slow", data_source="d", status="timeout", error_type="timeout", message="30 s", uid=7
        )
    first, second = (r.getMessage() for r in caplog.records)
    assert (
        first == "reward function 'boom' failed on sample uid=u1 data_source='openai/gsm8k': ValueError: bad"
    )
    assert "'slow' timed out on sample uid=7" in second
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_a_storm_is_rate_limited_and_the_drops_are_reported(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(0.0)
    failures = FailureLog(per_s=2.0, burst=3, clock=clock)
    with caplog.at_level(logging.WARNING, logger=failure_log.__name__):
        for i in range(1000):
            fail(failures, fn="boom" if i % 2 else "other", uid=str(i))
        assert len(caplog.records) == 3  # the burst, then nothing for the rest of the storm
        clock.now = 0.5  # one token refilled
        fail(failures, uid="later")
    assert len(caplog.records) == 4
    last = caplog.records[-1].getMessage()
    assert "uid=later" in last and "[997 more failures not logged (boom: 499, other: 498)]" in last
