"""Provider rate limits: per-function request/token budgets over a sliding minute, and what a 429 says.

A hosted API limits requests per minute (RPM) and tokens per minute (TPM). `Budget` keeps a caller under
its share: a request waits until fewer than `rpm` requests and fewer than `tpm` tokens were spent in the
last 60 s. Tokens are only known from the answer's `usage`, so they are recorded after each call (the
real count, not an estimate) and the next request waits for the window to drain below the limit.

`retry_delay_s` reads how long a 429 asks to wait: `Retry-After` (seconds or an HTTP date), else OpenAI's
`x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens` (`"1s"`, `"6m0s"`, `"20ms"`) for whichever budget
is exhausted, else None (the caller backs off exponentially).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping

from rewardfleet.services.common.retry_after import parse_retry_after

WINDOW_S = 60.0
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class Budget:
    """Requests and tokens spent in the last minute, for one function on one pool."""

    def __init__(
        self,
        rpm: int | None,
        tpm: int | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self._clock = clock
        self._sleep = sleep
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._token_sum = 0
        self._lock = asyncio.Lock()

    def _expire(self, now: float) -> None:
        while self._requests and self._requests[0] <= now - WINDOW_S:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= now - WINDOW_S:
            self._token_sum -= self._tokens.popleft()[1]

    def wait_s(self) -> float:
        """Seconds until one more request fits both budgets (0: now)."""
        now = self._clock()
        self._expire(now)
        wait = 0.0
        if self.rpm is not None and len(self._requests) >= self.rpm:
            wait = max(wait, self._requests[len(self._requests) - self.rpm] + WINDOW_S - now)
        if self.tpm is not None and self._token_sum >= self.tpm:
            # The wait ends when enough of the oldest spends have expired to bring the rest under the limit.
            excess, at = self._token_sum - self.tpm, now
            for stamp, tokens in self._tokens:
                excess -= tokens
                at = stamp
                if excess < 0:
                    break
            wait = max(wait, at + WINDOW_S - now)
        return wait

    async def acquire(self) -> float:
        """Wait for room, then count one request; returns the seconds waited."""
        waited = 0.0
        async with self._lock:  # one waiter at a time, so requests leave in arrival order
            while (delay := self.wait_s()) > 0:
                await self._sleep(delay)
                waited += delay
            self._requests.append(self._clock())
        return waited

    def spend_tokens(self, tokens: int) -> None:
        if tokens > 0:
            self._tokens.append((self._clock(), tokens))
            self._token_sum += tokens


def parse_duration_s(text: str) -> float | None:
    """OpenAI's reset durations: `"1s"`, `"6m0s"`, `"1h2m3.5s"`, `"20ms"`; None if it is not one."""
    text = text.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def retry_delay_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """How long a 429 (or 503) asks the caller to wait, from its headers; None if it does not say."""
    lower = {k.lower(): v for k, v in headers.items()}
    after = lower.get("retry-after-ms")
    if after is not None:
        try:
            return max(0.0, float(after) / 1000.0)
        except ValueError:
            pass
    delay = parse_retry_after(lower.get("retry-after"), now)
    if delay is not None:
        return delay
    delays = []
    for budget in ("requests", "tokens"):
        remaining = lower.get(f"x-ratelimit-remaining-{budget}")
        reset = lower.get(f"x-ratelimit-reset-{budget}")
        if reset is not None and (remaining is None or remaining.strip() == "0"):
            value = parse_duration_s(reset)
            if value is not None:
                delays.append(value)
    return max(delays) if delays else None
