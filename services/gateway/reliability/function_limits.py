"""Per-function limits for external judges.

`FunctionGate` holds one reward function's limits for external judges: `max_concurrency` calls at once,
`requests_per_minute` and `tokens_per_minute` (token buckets refilled continuously, bursts up to one minute's
worth). Calls over a limit wait for their turn (FIFO) instead of failing; admission bounds how many can wait.
Tokens are *estimated* without a tokenizer, as ceil(characters / 4) of the prompt (counted like
`input_limits.prompt_chars`: the text, or the messages' `content`), the `solution_str` and a string
`ground_truth`; a single call larger than one minute's budget is charged the whole budget, so it waits but
never forever.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from services.gateway.config import FunctionConfig
from services.gateway.reliability.input_limits import prompt_chars


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


class FunctionGate:
    def __init__(
        self,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
    ) -> None:
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self._tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None
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
                await asyncio.sleep(wait)
            if self._requests is not None:
                self._requests.take(1)
            if self._tokens is not None:
                self._tokens.take(tokens)

    @asynccontextmanager
    async def hold(self, tokens: int) -> AsyncIterator[None]:
        if self._slots is None:
            await self._pace(tokens)
            yield
            return
        async with self._slots:
            await self._pace(tokens)
            yield


def function_gates(configs: Mapping[str, FunctionConfig]) -> dict[str, FunctionGate]:
    """A gate for every function that has a limit (functions without one take no gate at all)."""
    return {
        name: FunctionGate(cfg.max_concurrency, cfg.requests_per_minute, cfg.tokens_per_minute)
        for name, cfg in configs.items()
        if cfg.max_concurrency or cfg.requests_per_minute or cfg.tokens_per_minute
    }
