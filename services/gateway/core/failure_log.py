"""One log line per failed sample, at WARNING (the gateway's default level shows it), rate-limited.

Trainers do not show why a sample failed: OpenRLHF and slime print only the HTTP status line, verl and TRL
only what their adapter raises on the trainer's side. So the gateway's log is where an operator finds the
function, the data source, the error and the sample's uid. A storm (a broken function under a full batch)
must not flood that log: lines are spent from a token bucket (`burst` at once, `per_s` refilled each second),
and what the bucket drops is counted and reported, per function, on the next line that gets through.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

DEFAULT_LOGGER = logging.getLogger(__name__)
_MAX_MESSAGE_CHARS = 500  # a huge exception text must not make one line a flood of its own


class FailureLog:
    def __init__(
        self,
        *,
        per_s: float = 5.0,
        burst: int = 20,
        logger: logging.Logger = DEFAULT_LOGGER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_s <= 0 or burst < 1:
            raise ValueError("FailureLog needs per_s > 0 and burst >= 1")
        self.per_s = per_s
        self.burst = burst
        self.logger = logger
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._dropped: Counter[str] = Counter()
        self._lock = threading.Lock()  # scorers run on one loop, but tests and threads may share one log

    def sample_failed(
        self,
        *,
        reward_fn: str,
        data_source: str,
        status: str,
        error_type: str,
        message: str,
        uid: str | int | None,
    ) -> None:
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_s)
            self._last = now
            if self._tokens < 1:
                self._dropped[reward_fn] += 1
                return
            self._tokens -= 1
            dropped, self._dropped = self._dropped, Counter()
        suffix = ""
        if dropped:
            counts = ", ".join(f"{name}: {n}" for name, n in sorted(dropped.items()))
            suffix = f" [{sum(dropped.values())} more failures not logged ({counts})]"
        self.logger.warning(
            "reward function %r %s on sample uid=%s data_source=%r: %s: %s%s",
            reward_fn,
            "timed out" if status == "timeout" else "failed",
            uid,
            data_source,
            error_type,
            message[:_MAX_MESSAGE_CHARS],
            suffix,
        )
