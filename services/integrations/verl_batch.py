"""Batched modes of the verl reward file: a step's samples as a few `POST /score/batch`.

A step's samples reach the gateway as a few `POST /score/batch` requests instead of one `POST /score` per
sample (one round trip per sample costs more than a cheap rule).

`compute_score` keeps verl's per-sample contract (verl 0.9.1's reward loop) and sends together the calls
that arrive within `batch_window_ms` of the first, up to `max_batch_size`; `compute_score_batch` is the list
contract of verl's `BatchRewardManager`. Results, key set and failure rules are `verl_reward.to_verl`'s; a
batch the gateway could not answer at all raises in every call of that batch. Configuration and when to use
which: docs/client.md ("verl, batched").
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from rewardfleet.services.client import AsyncRewardClient, ScoreResult
from rewardfleet.services.integrations._common import ClientPerLoop, gateway_url, shared_sync_client
from rewardfleet.services.integrations.verl_reward import _body, to_verl, with_components

DEFAULT_WINDOW_MS = 10.0
DEFAULT_MAX_BATCH = 1024  # the gateway accepts up to its max_batch_samples (4096 by default)


class _Coalescer:
    """Collects the samples of one event loop and sends them as `/score/batch` requests.

    A batch is sent when it holds `max_batch` samples, or `window_s` after its first sample arrived, so a
    lone call waits at most the window. Batches are sent concurrently (the client bounds them).
    """

    def __init__(self, client: AsyncRewardClient, window_s: float, max_batch: int, timeout_s: float) -> None:
        self._client = client
        self._window_s = window_s
        self._max_batch = max_batch
        self._timeout_s = timeout_s
        self._pending: list[tuple[dict[str, Any], asyncio.Future[ScoreResult]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()  # strong references: the loop keeps only weak ones

    def submit(self, body: dict[str, Any]) -> asyncio.Future[ScoreResult]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ScoreResult] = loop.create_future()
        self._pending.append((body, future))
        if len(self._pending) >= self._max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._window_s, self._flush)
        return future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[dict[str, Any], asyncio.Future[ScoreResult]]]) -> None:
        try:
            results = await self._client.score_batch([body for body, _ in batch], timeout_s=self._timeout_s)
        except BaseException as exc:  # the whole batch failed: every waiting call sees why
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)


class _CoalescerPerLoop:
    """One coalescer per (event loop, settings), dropped with its loop (like `ClientPerLoop`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients = ClientPerLoop()
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[Any, ...], _Coalescer]
        ] = weakref.WeakKeyDictionary()

    def get(
        self, url: str, *, window_s: float, max_batch: int, timeout_s: float, max_concurrency: int
    ) -> _Coalescer:
        client = self._clients.get(url, timeout_s=timeout_s, max_concurrency=max_concurrency)
        key = (url, window_s, max_batch, timeout_s, max_concurrency)
        with self._lock:
            per_loop = self._by_loop.setdefault(asyncio.get_running_loop(), {})
            coalescer = per_loop.get(key)
            if coalescer is None or coalescer._client is not client:  # the client was closed and replaced
                coalescer = _Coalescer(client, window_s, max_batch, timeout_s)
                per_loop[key] = coalescer
            return coalescer

    async def aclose(self) -> None:
        with self._lock:
            self._by_loop.pop(asyncio.get_running_loop(), None)
        await self._clients.aclose()


_coalescers = _CoalescerPerLoop()


def _check(window_ms: float, max_batch_size: int) -> None:
    if window_ms < 0:
        raise ValueError(f"batch_window_ms must be >= 0, got {window_ms}")
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    gateway_url: str | None = None,
    reward_fn: str | None = None,
    group_fn: str | None = None,
    error_score: float | None = None,
    extra_keys: list[str] | None = None,
    component_keys: list[str] | None = None,
    component_missing_score: float | None = None,
    timeout_s: float = 300.0,
    batch_window_ms: float = DEFAULT_WINDOW_MS,
    max_batch_size: int = DEFAULT_MAX_BATCH,
    max_concurrency: int = 64,
    **_verl_kwargs: Any,
) -> dict[str, Any]:
    """verl's async per-sample contract; concurrent calls share `/score/batch` requests."""
    _check(batch_window_ms, max_batch_size)
    coalescer = _coalescers.get(
        _url(gateway_url),
        window_s=batch_window_ms / 1000,
        max_batch=max_batch_size,
        timeout_s=timeout_s,
        max_concurrency=max_concurrency,
    )
    body = _body(data_source, solution_str, ground_truth, extra_info, reward_fn, group_fn)
    result = await coalescer.submit(body)
    out = to_verl(result, error_score=error_score, extra_keys=extra_keys)
    return with_components(out, result, component_keys, component_missing_score)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    *,
    gateway_url: str | None = None,
    reward_fn: str | None = None,
    error_score: float | None = None,
    extra_keys: list[str] | None = None,
    component_keys: list[str] | None = None,
    component_missing_score: float | None = None,
    timeout_s: float = 300.0,
    max_batch_size: int = 4096,
    **_verl_kwargs: Any,
) -> list[dict[str, Any]]:
    """verl's `BatchRewardManager` contract: the whole batch's lists in, one dict per sample out."""
    _check(0.0, max_batch_size)
    infos: Sequence[Any] = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    if not len(data_sources) == len(solution_strs) == len(ground_truths) == len(infos):
        raise ValueError(
            f"batch lists differ in length: {len(data_sources)} data_sources, {len(solution_strs)} "
            f"solution_strs, {len(ground_truths)} ground_truths, {len(infos)} extra_infos"
        )
    bodies = [
        _body(ds, sol, gt, info, reward_fn)
        for ds, sol, gt, info in zip(data_sources, solution_strs, ground_truths, infos, strict=True)
    ]
    client = shared_sync_client(_url(gateway_url), timeout_s=timeout_s)
    results: list[ScoreResult] = []
    for start in range(0, len(bodies), max_batch_size):
        results += client.score_batch(bodies[start : start + max_batch_size])
    return [
        with_components(
            to_verl(result, error_score=error_score, extra_keys=extra_keys),
            result,
            component_keys,
            component_missing_score,
        )
        for result in results
    ]


async def aclose() -> None:
    """Close this event loop's gateway clients (verl never needs it; scripts that end their loops do)."""
    await _coalescers.aclose()


def _url(explicit: str | None) -> str:
    return gateway_url(explicit)
