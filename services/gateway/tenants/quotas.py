"""A tenant's quotas, checked before any of a request's work starts (so a 429 loses nothing):

    requests_per_minute       every authenticated work request (the middleware, `request`)
    samples_in_flight         samples being scored at once; a batch takes all of its samples at once
    judge_tokens_per_minute   estimated tokens of samples of judge functions (function_limits.estimate_tokens)
    usd_per_day, usd_total    judge spend so far (priced fleet pools, scoped.TenantSpendMeter)
    sessions_open             environment sessions open at once: enforced by the session store itself
                              (environments/sessions.py), atomically with the session's creation

Minute quotas are fixed wall-clock windows, shared by every replica with `state_url`: a tenant may pass up to
twice a quota across one window boundary, never more within a window.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from rewardfleet.services.gateway.limits.function_limits import estimate_tokens
from rewardfleet.services.gateway.schemas import ScoreRequest
from rewardfleet.services.gateway.spend.meter import NANO_PER_USD
from rewardfleet.services.gateway.tenants.context import Caller, admitted
from rewardfleet.services.gateway.tenants.counters import Counters, window_index
from rewardfleet.services.gateway.tenants.errors import TenantQuotaExceeded
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics

logger = logging.getLogger(__name__)
MINUTE_S = 60.0
TOTAL_SPEND_RETRY_S = 3600.0  # no retry passes a total cap; Retry-After still has to say something


class Quotas:
    def __init__(self, counters: Counters, metrics: TenantMetrics, is_judge: Callable[[Any], bool]) -> None:
        self.counters = counters
        self.metrics = metrics
        self.is_judge = is_judge

    def _refuse(
        self, caller: Caller, quota: str, limit: float, retry_s: float, why: str
    ) -> TenantQuotaExceeded:
        self.metrics.refusals.labels(caller.tenant, quota).inc()
        return TenantQuotaExceeded(caller.tenant, quota, limit, retry_s, f"tenant {caller.tenant!r}: {why}")

    async def request(self, caller: Caller) -> None:
        """One work request against requests_per_minute."""
        limit = caller.config.quotas.requests_per_minute
        if limit is None:
            return
        wait = await self.counters.window_add(caller.tenant, "requests_per_minute", 1, limit, MINUTE_S)
        if wait > 0:
            raise self._refuse(
                caller, "requests_per_minute", limit, wait, f"{limit} requests per minute used"
            )

    async def check_spend(self, caller: Caller) -> None:
        """429 when the caller's usd_per_day or usd_total is spent (before each external-pool call too)."""
        await self._spend(caller)

    async def _spend(self, caller: Caller) -> None:
        quotas = caller.config.quotas
        if quotas.usd_per_day is None and quotas.usd_total is None:
            return
        day, total = await self.counters.spend(caller.tenant)
        if quotas.usd_total is not None and total / NANO_PER_USD >= quotas.usd_total:
            raise self._refuse(
                caller,
                "usd_total",
                quotas.usd_total,
                TOTAL_SPEND_RETRY_S,
                f"spent ${total / NANO_PER_USD:.6f} of its usd_total ${quotas.usd_total:g}",
            )
        if quotas.usd_per_day is not None and day / NANO_PER_USD >= quotas.usd_per_day:
            _, to_midnight = window_index(86400.0, self.counters.clock())
            raise self._refuse(
                caller,
                "usd_per_day",
                quotas.usd_per_day,
                to_midnight,
                f"spent ${day / NANO_PER_USD:.6f} of its usd_per_day ${quotas.usd_per_day:g} today (UTC)",
            )

    @asynccontextmanager
    async def admitted(
        self, caller: Caller | None, samples: Sequence[tuple[ScoreRequest, Any]]
    ) -> AsyncIterator[None]:
        """Hold the samples' place in the tenant's quotas while they are scored (nothing for no tenant, or
        samples already admitted by the request, e.g. one sample of an admitted batch)."""
        if caller is None or admitted.get():
            yield
            return
        quotas = caller.config.quotas
        n = len(samples)
        await self._spend(caller)
        limit = quotas.samples_in_flight
        if limit is not None and n > limit:
            raise self._refuse(
                caller, "samples_in_flight", limit, 1.0, f"{n} samples at once; samples_in_flight is {limit}"
            )
        if not await self.counters.inflight_acquire(caller.tenant, n, limit):
            raise self._refuse(
                caller, "samples_in_flight", limit or 0, 1.0, f"{limit} samples in flight already"
            )
        try:
            tpm = quotas.judge_tokens_per_minute
            if tpm is not None:
                tokens = sum(
                    estimate_tokens(s.prompt, s.solution_str, s.ground_truth)
                    for s, fn in samples
                    if self.is_judge(fn)
                )
                if tokens:
                    wait = await self.counters.window_add(
                        caller.tenant, "judge_tokens_per_minute", min(tokens, tpm), tpm, MINUTE_S
                    )
                    if wait > 0:
                        raise self._refuse(
                            caller,
                            "judge_tokens_per_minute",
                            tpm,
                            wait,
                            f"{tpm} judge tokens per minute used",
                        )
        except BaseException:
            await asyncio.shield(self.counters.inflight_release(caller.tenant, n))
            raise
        self.metrics.samples.labels(caller.tenant).inc(n)
        gauge = self.metrics.inflight.labels(caller.tenant)
        gauge.inc(n)
        token = admitted.set(True)
        try:
            yield
        finally:
            admitted.reset(token)
            gauge.dec(n)
            try:  # the samples are scored: a failed release must not turn their answer into an error
                await asyncio.shield(self.counters.inflight_release(caller.tenant, n))
            except Exception as exc:
                logger.warning("tenant %s: %d samples in flight not released: %s", caller.tenant, n, exc)
