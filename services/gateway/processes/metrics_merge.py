"""One exposition for the whole gateway from each process's own, as one process serving it all would show.

Counters, histograms and summaries' counts and sums add up; `_created` keeps the earliest. Gauges add up
(requests in flight, queue depths) except the few that describe one shared thing rather than a share of the
work: a probe ratio or a degraded flag (only the process holding the probes' lease sets them: `max`), and
the shadow judge's window statistics, which each process keeps over its own samples (`mean` of the
processes that report them). Anything else a family could need is named in `GAUGE_POLICY`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from statistics import fmean

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

NAMESPACE = "rewardfleet_"
GAUGE_POLICY: dict[str, str] = {
    f"{NAMESPACE}judge_probe_false_positive_ratio": "max",
    f"{NAMESPACE}judge_pool_degraded": "max",
    f"{NAMESPACE}judge_probe_backoff_seconds": "max",
    f"{NAMESPACE}environment_sessions_open": "max",  # the store's fleet-wide count, read by every process
    f"{NAMESPACE}shadow_agreement_ratio": "mean",
    f"{NAMESPACE}shadow_kappa": "mean",
    f"{NAMESPACE}shadow_score_drift": "mean",
    "process_start_time_seconds": "min",
    "python_info": "max",
}
_REDUCE: dict[str, Callable[[list[float]], float]] = {"sum": sum, "max": max, "min": min, "mean": fmean}

_Key = tuple[str, tuple[tuple[str, str], ...]]


def _policy(family: Metric, sample: Sample) -> str:
    if sample.name.endswith("_created"):
        return "min"
    if family.type in ("gauge", "unknown"):
        return GAUGE_POLICY.get(family.name, "sum")
    if family.type in ("info", "stateset"):
        return "max"
    return "sum"


def merge_expositions(texts: Sequence[str]) -> list[Metric]:
    """The merged families, in the order they first appear."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[_Key, list[float]]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            per_sample = values.setdefault(family.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                per_sample.setdefault(key, []).append(sample.value)
    out: list[Metric] = []
    for name, family in families.items():
        for (sample_name, labels), seen in values[name].items():
            reduce = _REDUCE[_policy(family, Sample(sample_name, dict(labels), 0.0))]
            family.samples.append(Sample(sample_name, dict(labels), float(reduce(seen))))
        out.append(family)
    return out


class _Families:
    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


def render(families: Iterable[Metric]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families))
    return generate_latest(registry)


def merged_exposition(texts: Sequence[str]) -> bytes:
    return render(merge_expositions(texts))
