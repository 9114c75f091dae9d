"""Deterministic inference on CPU: a row's output cannot see its batch, and rows still share forwards.

What moves a row's output with its batch, measured on this CPU's torch (docs/reproducibility.md): the padded
width (attention reduces over another number of columns, with other kernel blockings), and GEMMs over one
row per sequence (the heads after pooling) with fewer than 4 rows or, for a one-output head, a row count
that is not a multiple of 4 (other kernels, another summation order). Beyond that, the number of rows and a
row's place among them change nothing. So pooling runners (reward models, cross-encoders, encoders, PRMs,
CLIP) run fixed-shape forwards (`Runner.with_fixed_shapes`): rows grouped by length bucket, each group padded
to its bucket's width, the heads' rows to a multiple of 4 (a cross-encoder's whole batch, its head being
inside the model's forward), so a row alone runs the very computation it runs in any batch, and concurrent
requests still share one forward per bucket.

Generation and `/v1/score` share their forwards too, where the model allows it (a decoder whose attention
layers dispatch by name, with full causal attention): `GenerationRunner.deterministic_operations` packs the
tokens of every running row into one forward, each row's GEMMs over at least 4 token rows and its attention
over its own cache alone (runners/rowwise.py, runners/rowwise_batch.py). Prompt logprobs, and every
operation of a model that does not allow it, run one sequence per forward, a request's decoding in its own
one-row `DecodeBatch`. An unseeded sampled request gets seed 42, as SGLang's
deterministic mode does (`sampling_batch_info.py`), so its tokens do not depend on the process's global RNG
either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rewardfleet.services.model_server.runners.base import BatchFn, Runner
from rewardfleet.services.model_server.runners.decoding import DEFAULT_SAMPLING_SEED, seeded

__all__ = ["DEFAULT_SAMPLING_SEED", "one_at_a_time", "seeded", "serving_continuous", "serving_operations"]


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
    """The batch functions a batcher calls: the runner's own, or when `deterministic` its fixed-shape twin's,
    or (causal LMs) its `deterministic_operations` and one sequence per forward for the rest. A runner in an
    engine process (`EngineRunner`) is wrapped there, not here."""
    if not isinstance(runner, Runner) or not deterministic:
        ops: dict[str, BatchFn] = runner.operations()
        return ops
    if runner.supports_fixed_shapes:
        return runner.with_fixed_shapes().operations()
    own = runner.deterministic_operations()
    return {name: own.get(name) or one_at_a_time(fn) for name, fn in runner.operations().items()}


def serving_continuous(runner: Any, deterministic: bool) -> dict[str, Callable[[], Any]]:
    """Factories of the running generation batch: one `DecodeBatch`; when `deterministic`, the runner's
    batch-invariant one (`deterministic_continuous_operations`) or else `SoloDecodeBatches`."""
    if not isinstance(runner, Runner):
        return {}
    factories = runner.continuous_operations()
    if not deterministic:
        return factories
    own = runner.deterministic_continuous_operations()
    return {name: own.get(name) or _solo_factory(f) for name, f in factories.items()}


def _solo_factory(factory: Callable[[], Any]) -> Callable[[], SoloDecodeBatches]:
    def make() -> SoloDecodeBatches:
        return SoloDecodeBatches(factory)

    return make
