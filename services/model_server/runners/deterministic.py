"""Deterministic inference on CPU: each sequence runs its own forward, so its output cannot see its batch.

Why batch of one and not batch-invariant kernels: a padded batch changes what a row's reductions run over
(attention over padded columns, GEMM shapes that pick other oneDNN/MKL blockings), and on this CPU about
half the scores of a tiny reward model moved in the last bits when the same inputs were batched
differently (docs/reproducibility.md). A sequence forwarded alone has exactly one shape, whatever arrived
with it, so "alone" and "in any batch" run the very same computation. The batchers still group requests
(one queue hop, one pipe message to the engine per batch); only the forward is per sequence.

Generation keeps continuous batching's scheduling (requests join and leave between steps) but each request
decodes in its own one-row `DecodeBatch`. An unseeded sampled request gets seed 42, as SGLang's deterministic
mode does (`sampling_batch_info.py`), so its tokens do not depend on the process's global RNG either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rewardfleet.services.model_server.runners.base import BatchFn, Runner

# SGLang 0.5.23 samples with this seed when a request sets none and deterministic inference is on.
DEFAULT_SAMPLING_SEED = 42


def seeded(item: Any) -> Any:
    """`item` with seed 42 when it is a sampled generation request without a seed; anything else as is."""
    params = getattr(item, "params", None)
    if params is None or not hasattr(params, "seed") or params.seed is not None or params.greedy:
        return item
    return replace(item, params=replace(params, seed=DEFAULT_SAMPLING_SEED))


def one_at_a_time(fn: BatchFn) -> BatchFn:
    """A batch function that runs `fn` on each item alone, results in order."""

    def run(items: list[Any]) -> Sequence[Any]:
        out: list[Any] = []
        for item in items:
            out.extend(fn([seeded(item)]))
        return out

    return run


class SoloDecodeBatches:
    """The running generation batch of a deterministic server: one single-row `DecodeBatch` per request,
    stepped in turn. It answers the loop's calls (`continuous.py`) as one `DecodeBatch` does."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._batches: list[Any] = []
        self._owner: dict[int, Any] = {}  # id(row) -> its single-row batch

    def __len__(self) -> int:
        return sum(len(b) for b in self._batches)

    def admit(self, items: list[Any]) -> list[Any]:
        out: list[Any] = []
        for item in items:
            batch = self._factory()
            (row,) = batch.admit([seeded(item)])
            if len(batch):
                self._batches.append(batch)
                self._owner[id(row)] = batch
            out.append(row)
        return out

    def remove(self, rows: list[Any]) -> None:
        for row in rows:
            batch = self._owner.pop(id(row), None)
            if batch is not None:
                batch.remove([row])
        self._batches = [b for b in self._batches if len(b)]

    def step(self) -> list[Any]:
        finished: list[Any] = []
        for batch in self._batches:
            done = batch.step()
            for row in done:
                self._owner.pop(id(row), None)
            finished.extend(done)
        self._batches = [b for b in self._batches if len(b)]
        return finished

    def result(self, row: Any) -> Any:
        batch = self._batches[0] if self._batches else self._factory()
        return batch.result(row)


def serving_operations(runner: Any, deterministic: bool) -> dict[str, BatchFn]:
    """The batch functions a batcher calls: the runner's own, or one sequence per forward when
    `deterministic`. A runner in an engine process (`EngineRunner`) is wrapped there, not here."""
    ops: dict[str, BatchFn] = runner.operations()
    if not deterministic or not isinstance(runner, Runner):
        return ops
    return {name: one_at_a_time(fn) for name, fn in ops.items()}


def serving_continuous(runner: Any, deterministic: bool) -> dict[str, Callable[[], Any]]:
    """Factories of the running generation batch: one `DecodeBatch`, or `SoloDecodeBatches`."""
    if not isinstance(runner, Runner):
        return {}
    factories = runner.continuous_operations()
    if not deterministic:
        return factories
    return {name: _solo_factory(f) for name, f in factories.items()}


def _solo_factory(factory: Callable[[], Any]) -> Callable[[], SoloDecodeBatches]:
    def make() -> SoloDecodeBatches:
        return SoloDecodeBatches(factory)

    return make
