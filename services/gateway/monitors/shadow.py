"""Shadow judge: a reference pool re-scores a sample of a function's samples in the background.

A reference pool re-scores a sampled fraction of a function's samples in the background, and the gateway
reports how well the function's own judge agrees with it (docs/judge_monitoring.md).

This is the gold-judge check reward-hacking studies run by hand: a cheap judge drifting away from a strong
one (or accepting what the strong one rejects) shows up as falling agreement and kappa, and as score drift.

`functions.<name>.shadow` names the reference `pool` (and `reward_kwargs` to merge for it: a model, a
template). After an ok answer, with probability `sample_rate`, the same function is called again on the same
sample with `pool` (and those kwargs) swapped in, as a background task: the answer has already been sent, so
the shadow never delays it. At most `max_inflight` shadow calls run per function; a sample drawn beyond that
is skipped and counted (`outcome="dropped"`). A failed or timed-out shadow call is logged and counted
(`outcome="error"`), never raised. Each pair (primary score, shadow score) enters a sliding window of the
last `window` pairs, from which, per function and reference pool:

- `rewardfleet_shadow_agreement_ratio`: share of pairs on the same side of `pass_score` (accuracy of the
  primary judge taking the shadow as gold);
- `rewardfleet_shadow_kappa`: Cohen's kappa of those binary labels, (p_o - p_e) / (1 - p_e) with p_e the
  agreement expected by chance from each judge's accept rate (NaN while p_e = 1: both constant and equal);
- `rewardfleet_shadow_score_drift`: mean primary score minus mean shadow score (signed);
- `rewardfleet_shadow_window_pairs`: pairs in the window; `rewardfleet_shadow_calls_total{outcome}`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from rewardfleet.services.gateway.core.config import ShadowConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Outcome, Scorer
from rewardfleet.services.gateway.metrics import NAMESPACE
from rewardfleet.services.gateway.schemas import ScoreRequest

logger = logging.getLogger(__name__)


def agreement_stats(pairs: list[tuple[float, float]], pass_score: float) -> tuple[float, float, float]:
    """(agreement, Cohen's kappa, mean primary - mean shadow) over `pairs` of (primary, shadow) scores."""
    n = len(pairs)
    a = [p >= pass_score for p, _ in pairs]
    b = [s >= pass_score for _, s in pairs]
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    kappa = math.nan if expected >= 1.0 else (observed - expected) / (1.0 - expected)
    drift = sum(p for p, _ in pairs) / n - sum(s for _, s in pairs) / n
    return observed, kappa, drift


class ShadowMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["reward_fn", "pool"]

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, labels, namespace=NAMESPACE, registry=registry)

        self.agreement = gauge(
            "shadow_agreement_ratio",
            "Share of shadowed samples both judges put on the same side of pass_score.",
        )
        self.kappa = gauge("shadow_kappa", "Cohen's kappa between the function's judge and its shadow pool.")
        self.drift = gauge(
            "shadow_score_drift", "Mean primary score minus mean shadow score over the window."
        )
        self.pairs = gauge("shadow_window_pairs", "(primary, shadow) score pairs in the sliding window.")
        self.calls = Counter(
            "shadow_calls",
            "Shadow calls by outcome: ok, error (failed or timed out), dropped (at max_inflight).",
            [*labels, "outcome"],
            namespace=NAMESPACE,
            registry=registry,
        )


@dataclass
class _Shadowed:
    config: ShadowConfig
    window: deque[tuple[float, float]]
    inflight: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"ok": 0, "error": 0, "dropped": 0})


class ShadowJudge:
    """Owns the shadow tasks of every function with a `shadow` config; `close` cancels those in flight."""

    def __init__(
        self,
        configs: Mapping[str, ShadowConfig],
        scorer: Scorer,
        known_pools: set[str],
        registry: CollectorRegistry,
        rng: Callable[[], float] = random.random,
    ) -> None:
        unknown = {name: c.pool for name, c in configs.items() if c.pool not in known_pools}
        if unknown:
            raise ValueError(
                f"functions.<name>.shadow.pool names no pool: {unknown} (pools: {sorted(known_pools)})"
            )
        self.scorer = scorer
        self.metrics = ShadowMetrics(registry)
        self.rng = rng
        self.functions = {name: _Shadowed(c, deque(maxlen=c.window)) for name, c in configs.items()}
        self._tasks: set[asyncio.Task[None]] = set()
        for name, shadowed in self.functions.items():
            for outcome in shadowed.counts:
                self.metrics.calls.labels(name, shadowed.config.pool, outcome)
            self.metrics.pairs.labels(name, shadowed.config.pool).set(0)

    def scored(self, fn: RewardFunction, request: ScoreRequest, outcome: Outcome) -> None:
        """The scorer's hook after an ok answer: maybe start a shadow call. Never blocks, never raises."""
        shadowed = self.functions.get(fn.name)
        if shadowed is None or outcome.score is None or self.rng() >= shadowed.config.sample_rate:
            return
        config = shadowed.config
        if shadowed.inflight >= config.max_inflight:
            self._count(fn.name, shadowed, "dropped")
            return
        shadowed.inflight += 1
        task = asyncio.get_running_loop().create_task(self._shadow(fn, request, outcome.score, shadowed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _shadow(
        self, fn: RewardFunction, request: ScoreRequest, primary: float, shadowed: _Shadowed
    ) -> None:
        config = shadowed.config
        kwargs = {**fn.config.reward_kwargs, **config.reward_kwargs, "pool": config.pool}
        shadow_fn = dataclasses.replace(
            fn, config=fn.config.model_copy(update={"reward_kwargs": kwargs, "shadow": None})
        )
        try:
            async with asyncio.timeout(config.timeout_s):
                result = await self.scorer.run_unrecorded(shadow_fn, request)
        except TimeoutError:
            logger.warning(
                "shadow of %s on pool %s timed out after %ss", fn.name, config.pool, config.timeout_s
            )
            self._count(fn.name, shadowed, "error")
            return
        except Exception:
            logger.exception("shadow of %s on pool %s failed", fn.name, config.pool)
            self._count(fn.name, shadowed, "error")
            return
        finally:
            shadowed.inflight -= 1
        if result.status != "ok" or result.score is None:
            error = result.error
            logger.warning(
                "shadow of %s on pool %s failed: %s: %s",
                fn.name, config.pool, error.type if error else result.status, error.message if error else "",
            )  # fmt: skip
            self._count(fn.name, shadowed, "error")
            return
        self._count(fn.name, shadowed, "ok")
        shadowed.window.append((primary, result.score))
        self._export(fn.name, shadowed)

    def _count(self, name: str, shadowed: _Shadowed, outcome: str) -> None:
        shadowed.counts[outcome] += 1
        self.metrics.calls.labels(name, shadowed.config.pool, outcome).inc()

    def _export(self, name: str, shadowed: _Shadowed) -> None:
        pool = shadowed.config.pool
        agreement, kappa, drift = agreement_stats(list(shadowed.window), shadowed.config.pass_score)
        self.metrics.agreement.labels(name, pool).set(agreement)
        self.metrics.kappa.labels(name, pool).set(kappa)
        self.metrics.drift.labels(name, pool).set(drift)
        self.metrics.pairs.labels(name, pool).set(len(shadowed.window))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def summary(self) -> dict[str, Any]:
        out = {}
        for name, shadowed in self.functions.items():
            pairs = list(shadowed.window)
            stats = agreement_stats(pairs, shadowed.config.pass_score) if pairs else (None, None, None)
            kappa = stats[1]
            out[name] = {
                "pool": shadowed.config.pool,
                "pairs": len(pairs),
                "agreement": stats[0],
                "kappa": None if kappa is None or math.isnan(kappa) else kappa,
                "score_drift": stats[2],
                "inflight": shadowed.inflight,
                "calls": dict(shadowed.counts),
            }
        return out
