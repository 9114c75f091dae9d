"""One TRL reward function per reward component: `GRPOTrainer(reward_funcs=make_component_reward_funcs(...))`.

    from rewardfleet.services.integrations.trl_components import make_component_reward_funcs
    funcs = make_component_reward_funcs(["accuracy", "format"], "http://gateway:8000", reward_fn="combo")
    trainer = GRPOTrainer(..., reward_funcs=funcs, args=GRPOConfig(reward_weights=[1.0, 0.5], ...))

TRL logs each function as `rewards/<name>/mean` and weighs them with `reward_weights`. The functions share one
scoring of each batch: the first to be called posts the batch (as `trl.make_async_reward_func` does, same
`SampleMapper` keyword arguments), the others await the same answer; the last few batches are kept, keyed by
their content. Each returns its component of each result (`reward_components[name]`), or None — TRL's "not
applicable", logged — for a sample that failed or has no such component; a client error raises as in trl.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal

from rewardfleet.services.client import GatewayUnavailable, RetryPolicy, ScoreResult
from rewardfleet.services.integrations._common import ClientPerLoop, gateway_url
from rewardfleet.services.integrations.trl import AsyncRewardFunc, SampleMapper

logger = logging.getLogger(__name__)
KEPT_BATCHES = 8


def _digest(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class SharedBatches:
    """Scores each distinct batch once for every component function of a set."""

    def __init__(self, url: str, mapper: SampleMapper, **client: Any) -> None:
        self.url = url
        self.mapper = mapper
        self.client = client
        self.clients = ClientPerLoop()
        self.batches: OrderedDict[str, asyncio.Future[list[ScoreResult]]] = OrderedDict()

    async def results(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: dict[str, Any]
    ) -> list[ScoreResult]:
        key = _digest(list(prompts), list(completions), columns)
        future = self.batches.get(key)
        if future is None or (future.done() and future.exception() is not None):
            future = asyncio.ensure_future(self._score(prompts, completions, columns))
            self.batches[key] = future
            while len(self.batches) > KEPT_BATCHES:
                self.batches.popitem(last=False)
        return await asyncio.shield(future)

    async def _score(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: dict[str, Any]
    ) -> list[ScoreResult]:
        samples = self.mapper.samples(prompts, completions, columns)
        return await self.clients.get(self.url, **self.client).score_many(samples)


def component_rewards(
    results: Sequence[ScoreResult], name: str, on_unavailable: Literal["raise", "none"]
) -> list[float | None]:
    rewards: list[float | None] = []
    for result in results:
        exc = result.exception
        if exc is not None and not (isinstance(exc, GatewayUnavailable) and on_unavailable == "none"):
            raise exc
        value = (result.reward_components or {}).get(name) if result.ok else None
        if value is None:
            why = result.error.type if result.error else ("no component" if result.ok else result.status)
            logger.warning(
                "reward sample %s: component %r unavailable (%s); returning None", result.uid, name, why
            )
        rewards.append(value)
    return rewards


def make_component_reward_funcs(
    components: Sequence[str],
    url: str | None = None,
    *,
    timeout_s: float = 300.0,
    max_concurrency: int = 64,
    retry: RetryPolicy | None = None,
    on_unavailable: Literal["raise", "none"] = "raise",
    **mapping: Any,
) -> list[AsyncRewardFunc]:
    """One `async def` TRL reward function per component (named after it), sharing each batch's scoring."""
    if not components or len(set(components)) != len(components):
        raise ValueError(f"components must be distinct names, got {list(components)}")
    shared = SharedBatches(
        gateway_url(url),
        SampleMapper(**mapping),
        timeout_s=timeout_s,
        max_concurrency=max_concurrency,
        retry=retry,
    )

    def one(name: str) -> AsyncRewardFunc:
        async def reward(
            prompts: Sequence[Any],
            completions: Sequence[Any],
            completion_ids: Sequence[Any] | None = None,
            trainer_state: Any = None,
            **dataset_columns: Any,
        ) -> list[float | None]:
            results = await shared.results(prompts, completions, dataset_columns)
            return component_rewards(results, name, on_unavailable)

        reward.__name__ = reward.__qualname__ = name
        reward.aclose = shared.clients.aclose  # type: ignore[attr-defined]
        return reward

    return [one(name) for name in components]
