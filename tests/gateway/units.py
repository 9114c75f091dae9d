"""In-process building blocks for the gateway's unit tests: real `Scorer`, `GatewayMetrics` and
`RewardFunction` objects around small async functions (no worker pool, no HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardfleet.services.gateway.cache.idempotency import ResultCache
from rewardfleet.services.gateway.config import FunctionConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Injectables, Scorer
from rewardfleet.services.gateway.execution.loader import FunctionRef
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.schemas import ScoreRequest


def async_function(name: str, fn: Callable[..., Any], **config: Any) -> RewardFunction:
    """`fn` (an `async def` taking verl's four arguments) as a loaded reward function named `name`."""
    return RewardFunction(
        name=name,
        ref=FunctionRef(f"tests.{name}", "compute_score"),
        fn=fn,
        source_file=Path(f"{name}.py"),
        origin="user",
        is_async=True,
        declared=frozenset(),
        var_kwargs=False,
        data_sources=(),
        version=f"{name}-v1",
        config=FunctionConfig(**config),
    )


def scorer(metrics: GatewayMetrics | None = None, cache: ResultCache | None = None) -> Scorer:
    return Scorer(None, metrics or GatewayMetrics(), Injectables(), cache=cache, gates={})


def sample(**fields: Any) -> ScoreRequest:
    return ScoreRequest.model_validate({"data_source": "d", "solution_str": "x", **fields})


def counter(metrics: GatewayMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(f"rewardfleet_{name}_total", labels)
    return value or 0.0
