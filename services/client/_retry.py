"""The retry policy: which failures are transient and how long to wait before the next attempt.

Only the delay arithmetic lives here; the one retry loop is `AsyncRewardClient._request`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# 429 is backpressure, 503 is "starting / draining / overloaded": both say "ask again later".
RETRYABLE_STATUSES: frozenset[int] = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter and a cap, bounded by attempts and by elapsed time.

    The n-th retry (n = 0, 1, ...) waits `uniform(0, min(max_backoff_s, initial_backoff_s * multiplier**n))`
    ("full jitter": many clients retrying after a gateway restart spread out instead of arriving together),
    unless the gateway sent `Retry-After`, which is honoured (up to `max_retry_after_s`).
    """

    max_attempts: int = 12
    initial_backoff_s: float = 0.2
    multiplier: float = 2.0
    max_backoff_s: float = 10.0
    max_retry_after_s: float = 60.0
    # Give up once this much time has passed since the first attempt, whatever `max_attempts` says.
    max_elapsed_s: float = 300.0
    # A per-request timeout is treated as transient: the same uid is sent again so the gateway can tell.
    retry_on_timeout: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.initial_backoff_s < 0 or self.max_backoff_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("backoff durations must be >= 0")
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be >= 1, got {self.multiplier}")

    def backoff_s(self, retry_index: int, rng: random.Random | None = None) -> float:
        """Full-jitter delay before retry number `retry_index` (0-based)."""
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier**retry_index)
        return (rng or random).uniform(0.0, ceiling)

    def delay_s(
        self, retry_index: int, retry_after_s: float | None, rng: random.Random | None = None
    ) -> float:
        """The wait before the next attempt: the server's `Retry-After` if it gave one, else the backoff.

        A small jitter is added on top of `Retry-After` so that clients told the same number do not all
        return in the same millisecond.
        """
        if retry_after_s is not None:
            base = min(max(retry_after_s, 0.0), self.max_retry_after_s)
            return base + (rng or random).uniform(0.0, min(self.initial_backoff_s, base * 0.1 + 0.01))
        return self.backoff_s(retry_index, rng)
