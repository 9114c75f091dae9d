"""`Retry-After` in seconds, as the client (from the gateway) and the gateway (from hosted APIs) read it.

RFC 9110 §10.2.3: delta-seconds or an HTTP date. A fractional number is accepted (some servers send one); a
date in the past is 0; anything else (absent, empty, NaN, not a date) is None, so the caller falls back to its
own backoff.
"""

from __future__ import annotations

import time
from datetime import UTC
from email.utils import parsedate_to_datetime


def parse_retry_after(value: str | None, now_s: float | None = None) -> float | None:
    """Seconds to wait; `now_s` is the current Unix time (default: `time.time()`), for HTTP dates."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now_s is None else now_s)
    if seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0)
