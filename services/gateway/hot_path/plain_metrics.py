"""Labelled counters and histograms counted in plain Python attributes, exposed by a Collector.

client_python takes a lock per update (and a histogram walks its bounds in Python); the gateway updates these
metrics only on its event-loop thread, where `/metrics` is scraped too, so the hot path needs no lock: a child
is a few slotted floats and the families are built at scrape time (the cost, measured by
bench/metrics_hot_path.py: docs/BENCHMARKS.md). Anything updated from another thread stays on client_python.

The exposition is client_python's, sample for sample (tests/gateway/hot_path/test_plain_metrics.py compares
the two):
`_total` and `_created` for a counter; for a histogram `_bucket` (cumulative, `le` formatted as client_python
does), `_count`, `_sum` only when the lowest bound is >= 0 (OpenMetrics: no `_sum` with negative buckets) and
`_created`. `_created` is always exposed: client_python's PROMETHEUS_DISABLE_CREATED_SERIES is not read here
(the gateway never sets it).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import INF, floatToGoString


def _full_name(name: str, namespace: str) -> str:
    return f"{namespace}_{name}" if namespace else name


Child = TypeVar("Child")


class _Family(Generic[Child]):
    """What a counter and a histogram share: name, help, label names, registration, children by labels."""

    typ = ""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        namespace: str,
        registry: CollectorRegistry,
    ) -> None:
        self.name = _full_name(name, namespace)
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], Child] = {}
        registry.register(self)

    def labels(self, *labelvalues: object) -> Child:
        """The child of these label values (created on first use): keep it, as client_python's."""
        if len(labelvalues) != len(self.labelnames):
            raise ValueError(
                f"{self.name}: {len(self.labelnames)} label values expected, got {len(labelvalues)}"
            )
        key = tuple(str(v) for v in labelvalues)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._new_child()
        return child

    def _new_child(self) -> Child:
        raise NotImplementedError

    def collect(self) -> Iterable[Metric]:
        raise NotImplementedError

    def describe(self) -> list[Metric]:
        """The family without samples: the registry checks names with it, never calling `collect` to do so."""
        return [Metric(self.name, self.documentation, self.typ)]


class CounterChild:
    __slots__ = ("created_s", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created_s = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount


class PlainCounter(_Family[CounterChild]):
    """A labelled counter (`<name>_total`, `<name>_created`); `labels(...)` returns a child to keep."""

    typ = "counter"

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        namespace: str = "",
        registry: CollectorRegistry,
    ) -> None:
        super().__init__(name.removesuffix("_total"), documentation, labelnames, namespace, registry)

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def collect(self) -> Iterable[Metric]:
        family = Metric(self.name, self.documentation, self.typ)
        for values, child in list(self._children.items()):  # a snapshot: a new child never breaks the loop
            labels = dict(zip(self.labelnames, values, strict=True))
            family.add_sample(self.name + "_total", labels, child.value)
            family.add_sample(self.name + "_created", labels, child.created_s)
        yield family


class HistogramChild:
    """Per-bucket (not cumulative) counts, the last one +Inf's, and the sum."""

    __slots__ = ("bounds", "counts", "created_s", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * len(bounds)
        self.sum = 0.0
        self.created_s = time.time()

    def observe(self, amount: float) -> None:
        self.sum += amount
        # the first bound >= amount, as client_python's `amount <= bound` scan; NaN falls in no bucket there
        if amount == amount:
            self.counts[bisect_left(self.bounds, amount)] += 1.0


class PlainHistogram(_Family[HistogramChild]):
    """A labelled histogram with fixed bounds (+Inf appended); `labels(...)` returns a child to keep."""

    typ = "histogram"

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        buckets: Sequence[float],
        namespace: str = "",
        registry: CollectorRegistry,
    ) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError(f"{name}: buckets not in sorted order")
        if not bounds or bounds[-1] != INF:
            bounds.append(INF)
        if "le" in labelnames:
            raise ValueError(f"{name}: 'le' is the bucket label")
        self.bounds = tuple(bounds)
        # client_python's own `le` text ("0.005", "+Inf", "1.0e+06"): the same series (untyped there)
        self._le = tuple(floatToGoString(b) for b in self.bounds)  # type: ignore[no-untyped-call]
        super().__init__(name, documentation, labelnames, namespace, registry)

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def collect(self) -> Iterable[Metric]:
        family = Metric(self.name, self.documentation, self.typ)
        with_sum = self.bounds[0] >= 0
        for values, child in list(self._children.items()):
            labels = dict(zip(self.labelnames, values, strict=True))
            cumulative = 0.0
            for le, count in zip(self._le, list(child.counts), strict=True):
                cumulative += count
                family.add_sample(self.name + "_bucket", {**labels, "le": le}, cumulative)
            family.add_sample(self.name + "_count", labels, cumulative)
            if with_sum:
                family.add_sample(self.name + "_sum", labels, child.sum)
            family.add_sample(self.name + "_created", labels, child.created_s)
        yield family
