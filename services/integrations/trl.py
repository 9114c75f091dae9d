"""Reward callables for TRL's `GRPOTrainer(reward_funcs=[...])`, scored by the gateway.

    from rewardfleet.services.integrations.trl import make_reward_func, make_async_reward_func
    trainer = GRPOTrainer(..., reward_funcs=[make_async_reward_func("http://reward-gateway:8000")])

TRL calls `f(prompts=..., completions=..., **dataset_columns)` with one entry per generation; each becomes
one `/score` sample, and with `num_generations` each run of that many completions one GRPO group. A failed
sample is None (TRL's "not applicable"), logged, never 0; a 4xx raises (a configuration error), and so
does an unreachable gateway unless `on_unavailable="none"`. How each field is filled, the groups' ids and
why None and not 0: docs/client.md ("TRL").
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from rewardfleet.services.client import GatewayUnavailable, RetryPolicy, RewardClient, ScoreResult
from rewardfleet.services.integrations._common import (
    ClientPerLoop,
    close_at_exit,
    completion_text,
    gateway_url,
)

logger = logging.getLogger(__name__)

GROUND_TRUTH_CANDIDATES = ("ground_truth", "solution", "answer", "label")
# Arguments TRL passes that are not dataset columns.
_TRAINER_ARGS = frozenset(
    {"completion_ids", "trainer_state", "step", "run_name", "log_extra", "log_metric", "environments"}
)

SyncRewardFunc = Callable[..., list[float | None]]
AsyncRewardFunc = Callable[..., Awaitable[list[float | None]]]


class SampleMapper:
    """Turns one TRL call into `/score` samples (see the module docstring for the mapping)."""

    def __init__(
        self,
        *,
        data_source: str | None = None,
        data_source_column: str = "data_source",
        ground_truth_column: str | None = None,
        extra_info_column: str = "extra_info",
        reward_fn: str | None = None,
        num_generations: int | None = None,
        group_fn: str | None = None,
    ) -> None:
        if num_generations is not None and num_generations < 1:
            raise ValueError(f"num_generations must be >= 1, got {num_generations}")
        self.data_source = data_source
        self.data_source_column = data_source_column
        self.ground_truth_column = ground_truth_column
        self.extra_info_column = extra_info_column
        self.reward_fn = reward_fn
        self.num_generations = num_generations
        self.group_fn = group_fn
        self._run = uuid.uuid4().hex[:12]  # this callable's groups never meet another's on the gateway
        self._calls = itertools.count()

    def samples(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        if len(prompts) != len(completions):
            raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
        columns = {k: v for k, v in columns.items() if k not in _TRAINER_ARGS}
        gt_column = self.ground_truth_column or next(
            (c for c in GROUND_TRUTH_CANDIDATES if c in columns), None
        )
        used = {self.data_source_column, self.extra_info_column, gt_column}
        samples = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            row = {k: _at(v, i) for k, v in columns.items()}
            extra = (
                dict(row[self.extra_info_column])
                if isinstance(row.get(self.extra_info_column), Mapping)
                else {}
            )
            for key, value in row.items():
                if key not in used and key not in extra and _is_jsonable(value):
                    extra[key] = value
            data_source = self.data_source or row.get(self.data_source_column) or "trl"
            sample: dict[str, Any] = {
                "data_source": str(data_source),
                "solution_str": completion_text(completion),
                "ground_truth": row.get(gt_column) if gt_column else None,
                "extra_info": extra,
                "prompt": prompt if isinstance(prompt, str) else _messages(prompt),
            }
            if self.reward_fn:
                sample["reward_fn"] = self.reward_fn
            samples.append(sample)
        if self.num_generations is not None:
            self._group(samples, prompts, self.num_generations)
        return samples

    def _group(self, samples: list[dict[str, Any]], prompts: Sequence[Any], n: int) -> None:
        """Each `n` consecutive samples form one group (see the module docstring)."""
        if len(samples) % n:
            raise ValueError(f"{len(samples)} completions are not whole groups of num_generations={n}")
        call = next(self._calls)
        for start in range(0, len(samples), n):
            if any(prompts[start + j] != prompts[start] for j in range(n)):
                raise ValueError(
                    f"completions {start}..{start + n - 1} answer different prompts: not one group of "
                    f"num_generations={n} (is num_generations the trainer's?)"
                )
            for j in range(n):
                samples[start + j].update(
                    group_id=f"{self._run}-{call}-{start // n}", group_size=n, group_index=j
                )
                if self.group_fn:
                    samples[start + j]["group_fn"] = self.group_fn


def to_trl(results: Sequence[ScoreResult], on_unavailable: Literal["raise", "none"]) -> list[float | None]:
    """Results as TRL rewards: the score, or None (logged) for a failed sample; client errors raise."""
    rewards: list[float | None] = []
    for result in results:
        exc = result.exception
        if exc is not None and not (isinstance(exc, GatewayUnavailable) and on_unavailable == "none"):
            raise exc
        if not result.ok:
            error = f"{result.error.type}: {result.error.message}" if result.error else result.status
            if result.score is not None:
                logger.warning(
                    "reward sample %s %s (%s): gateway fallback score %s",
                    result.uid,
                    result.status,
                    error,
                    result.score,
                )
            else:
                logger.warning("reward sample %s %s (%s): returning None", result.uid, result.status, error)
        rewards.append(result.score)
    return rewards


def make_reward_func(
    url: str | None = None,
    *,
    name: str = "rewardfleet",
    timeout_s: float = 300.0,
    max_concurrency: int = 64,
    retry: RetryPolicy | None = None,
    on_unavailable: Literal["raise", "none"] = "raise",
    **mapping: Any,
) -> SyncRewardFunc:
    """A synchronous TRL reward function (blocks until the batch is scored, samples posted concurrently).

    `url` defaults to `$REWARDFLEET_URL`; `mapping` is `SampleMapper`'s keyword arguments.
    """
    mapper = SampleMapper(**mapping)
    address = gateway_url(url)
    lock = threading.Lock()
    holder: list[RewardClient] = []

    def client() -> RewardClient:
        with lock:
            if not holder:
                client = RewardClient(
                    address, timeout_s=timeout_s, max_concurrency=max_concurrency, retry=retry
                )
                holder.append(close_at_exit(client))
            return holder[0]

    def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        trainer_state: Any = None,
        **dataset_columns: Any,
    ) -> list[float | None]:
        samples = mapper.samples(prompts, completions, dataset_columns)
        return to_trl(client().score_many(samples), on_unavailable)

    reward.__name__ = reward.__qualname__ = name
    return reward


def make_async_reward_func(
    url: str | None = None,
    *,
    name: str = "rewardfleet",
    timeout_s: float = 300.0,
    max_concurrency: int = 64,
    retry: RetryPolicy | None = None,
    on_unavailable: Literal["raise", "none"] = "raise",
    **mapping: Any,
) -> AsyncRewardFunc:
    """An `async def` TRL reward function (TRL gathers async reward functions on its own event loop)."""
    mapper = SampleMapper(**mapping)
    address = gateway_url(url)
    clients = ClientPerLoop()

    async def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        trainer_state: Any = None,
        **dataset_columns: Any,
    ) -> list[float | None]:
        samples = mapper.samples(prompts, completions, dataset_columns)
        client = clients.get(address, timeout_s=timeout_s, max_concurrency=max_concurrency, retry=retry)
        return to_trl(await client.score_many(samples), on_unavailable)

    reward.__name__ = reward.__qualname__ = name
    # `await reward.aclose()` on the loop that scored closes its connections (TRL's loop lives until exit).
    reward.aclose = clients.aclose  # type: ignore[attr-defined]
    if not asyncio.iscoroutinefunction(reward):  # TRL decides sync vs async with this very check
        raise RuntimeError("async reward function lost its coroutine-function marker")
    return reward


def _at(column: Any, i: int) -> Any:
    try:
        return column[i]
    except (TypeError, IndexError, KeyError):
        return column  # a scalar passed for the whole batch


def _messages(prompt: Any) -> Any:
    if isinstance(prompt, Sequence) and all(isinstance(m, Mapping) for m in prompt):
        return [dict(m) for m in prompt]
    return str(prompt)


def _is_jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
