"""Per-function limits for external judges.

`FunctionGate` holds one reward function's limits for external judges: `max_concurrency` calls at once,
`requests_per_minute` and `tokens_per_minute` (token buckets refilled continuously, bursts up to one minute's
worth). Calls over a limit wait for their turn (FIFO) instead of failing; admission bounds how many can wait.
Where the call's result reports the tokens it used (`extra.usage`, OpenAI shape), the TPM bucket is charged
those instead of the estimate (`TokenCharge.settle`): a judge that used more makes the next calls wait.
Tokens are *estimated* without a tokenizer, as ceil(characters / 4) of the prompt (counted like
`input_limits.prompt_chars`: the text, or the messages' `content`), the `solution_str` and a string
`ground_truth`; a single call larger than one minute's budget is charged the whole budget, so it waits but
never forever.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from rewardfleet.services.gateway.limits.input_limits import prompt_chars


def estimate_tokens(prompt: Any, solution_str: str, ground_truth: Any) -> int:
    """ceil(characters / 4) over the prompt, the solution and a string ground truth (see module docstring)."""
    chars = len(solution_str) + prompt_chars(prompt)
    if isinstance(ground_truth, str):
        chars += len(ground_truth)
    return max(1, math.ceil(chars / 4))


class TokenBucket:
    """`per_minute` units, refilled continuously; starts full. `clock` is injectable (tests of the maths)."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate_per_s = per_minute / 60.0
        self.level = self.capacity
        self.clock = clock
        self.stamp = clock()

    def wait_s(self, amount: float) -> float:
        """Seconds until `amount` units are available (0 when they are now); refills first."""
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate_per_s)
        self.stamp = now
        amount = min(amount, self.capacity)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate_per_s

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)


class Charge(Protocol):
    """Tokens charged up front (an estimate); `settle` corrects the charge once the call reports usage."""

    def settle(self, real_tokens: int) -> None: ...


class Gate(Protocol):
    """One reward function's budgets: `hold(estimated_tokens)` waits for a slot and for RPM/TPM budget."""

    def hold(self, tokens: int) -> AbstractAsyncContextManager[Charge]: ...


def reported_tokens(extra: dict[str, Any]) -> int | None:
    """Tokens a judge's answer says it used: `extra["usage"]` in the OpenAI shape (`total_tokens`, or
    `prompt_tokens` + `completion_tokens`). None when the function reports nothing usable."""
    usage = extra.get("usage")
    if not isinstance(usage, dict):
        return None
    total = _count(usage.get("total_tokens"))
    if total is not None:
        return total
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    return None if prompt is None or completion is None else prompt + completion


def _count(value: Any) -> int | None:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    return None


class TokenCharge:
    """What a call was charged up front (the estimate); `settle` corrects the TPM bucket once the call
    reports the tokens it really used (a refund when it used fewer)."""

    def __init__(self, bucket: TokenBucket | None, estimated: int) -> None:
        self.bucket = bucket
        self.charged = min(estimated, int(bucket.capacity)) if bucket is not None else estimated

    def settle(self, real_tokens: int) -> None:
        if self.bucket is not None and real_tokens != self.charged:
            self.bucket.level = min(self.bucket.capacity, self.bucket.level - (real_tokens - self.charged))
            self.charged = real_tokens


class FunctionGate:
    def __init__(
        self,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._requests = TokenBucket(requests_per_minute, clock) if requests_per_minute else None
        self._tokens = TokenBucket(tokens_per_minute, clock) if tokens_per_minute else None
        self._sleep = sleep
        self._turn = asyncio.Lock()  # FIFO: one caller at a time waits for the buckets

    async def _pace(self, tokens: int) -> None:
        async with self._turn:
            while True:
                wait = 0.0
                if self._requests is not None:
                    wait = self._requests.wait_s(1)
                if self._tokens is not None:
                    wait = max(wait, self._tokens.wait_s(tokens))
                if wait <= 0:
                    break
                await self._sleep(wait)
            if self._requests is not None:
                self._requests.take(1)
            if self._tokens is not None:
                self._tokens.take(tokens)

    @asynccontextmanager
    async def hold(self, tokens: int) -> AsyncIterator[TokenCharge]:
        if self._slots is None:
            await self._pace(tokens)
            yield TokenCharge(self._tokens, tokens)
            return
        async with self._slots:
            await self._pace(tokens)
            yield TokenCharge(self._tokens, tokens)


class FunctionLimits(Protocol):
    """The limits of one function's section (`FunctionConfig` has them)."""

    @property
    def max_concurrency(self) -> int | None: ...

    @property
    def requests_per_minute(self) -> float | None: ...

    @property
    def tokens_per_minute(self) -> float | None: ...


def function_gates(
    configs: Mapping[str, FunctionLimits],
    make: Callable[[str, FunctionLimits], Any] | None = None,
) -> dict[str, Any]:
    """A gate for every function that has a limit (functions without one take no gate at all). `make` builds
    it (the state backend's, state_store/); by default an in-process `FunctionGate`."""
    build = make or (
        lambda _, cfg: FunctionGate(cfg.max_concurrency, cfg.requests_per_minute, cfg.tokens_per_minute)
    )
    return {
        name: build(name, cfg)
        for name, cfg in configs.items()
        if cfg.max_concurrency or cfg.requests_per_minute or cfg.tokens_per_minute
    }
