"""`Retry-After` as the client and the gateway read it: delta-seconds or an HTTP date, else None."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from rewardfleet.services.common.retry_after import parse_retry_after


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
    assert parse_retry_after(header, now_s=now.timestamp()) == pytest.approx(30.0)
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(past, now_s=now.timestamp()) == 0.0


def test_a_date_without_a_zone_is_gmt() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:10", now_s=now.timestamp()) == pytest.approx(10.0)
