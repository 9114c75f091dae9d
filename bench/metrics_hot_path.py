"""Microseconds per `GatewayMetrics.observe_call` / `observe_request` (the per-call and per-request metrics,
counted in plain attributes) against the same updates on client_python's `Counter`/`Histogram` children
(bound once, as the gateway did before), in one process, alternating rounds; prints each and the ratio.

    .venv/bin/python -m bench.metrics_hot_path [--calls 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import timeit

from prometheus_client import CollectorRegistry, Counter, Histogram

from bench.common import BenchResult, Row, median, print_result
from rewardfleet.services.gateway.metrics import (
    CALL_BUCKETS_S,
    NAMESPACE,
    REQUEST_BUCKETS_S,
    SCORE_BUCKETS,
    GatewayMetrics,
)


class ClientPythonMetrics:
    """The hot metrics on client_python with children bound once per label set (the gateway before #29)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        ns, drift = NAMESPACE, ["reward_fn", "data_source"]
        self.requests = Counter("gateway_requests", ".", ["route", "status"], namespace=ns, registry=r)
        self.request_duration = Histogram(
            "gateway_request_duration_seconds",
            ".",
            ["route"],
            namespace=ns,
            buckets=REQUEST_BUCKETS_S,
            registry=r,
        )
        self.fn_duration = Histogram(
            "reward_fn_duration_seconds", ".", ["reward_fn"], namespace=ns, buckets=CALL_BUCKETS_S, registry=r
        )
        self.fn_outcomes = Counter(
            "reward_fn_outcomes", ".", ["reward_fn", "outcome"], namespace=ns, registry=r
        )
        self.score = Histogram("reward_score", ".", drift, namespace=ns, buckets=SCORE_BUCKETS, registry=r)
        sums = ("reward_score_positive_sum", "reward_score_negative_sum", "reward_score_squared_sum")
        self.sums = [Counter(name, ".", drift, namespace=ns, registry=r) for name in sums]
        self._request: dict[tuple[str, int], tuple[Counter, Histogram]] = {}
        self._call: dict[tuple[str, str], tuple[Histogram, Counter]] = {}
        self._score: dict[tuple[str, str], tuple[Histogram, Counter, Counter, Counter]] = {}

    def observe_request(self, route: str, status: int, duration_s: float) -> None:
        children = self._request.get((route, status))
        if children is None:
            children = self._request[(route, status)] = (
                self.requests.labels(route, str(status)),
                self.request_duration.labels(route),
            )
        children[0].inc()
        children[1].observe(duration_s)

    def observe_call(self, fn: str, source: str, outcome: str, compute_s: float, score: float | None) -> None:
        children = self._call.get((fn, outcome))
        if children is None:
            children = self._call[(fn, outcome)] = (
                self.fn_duration.labels(fn),
                self.fn_outcomes.labels(fn, outcome),
            )
        children[0].observe(compute_s)
        children[1].inc()
        if outcome == "ok" and score is not None:
            child = self._score.get((fn, source))
            if child is None:
                positive, negative, squared = (m.labels(fn, source) for m in self.sums)
                child = self._score[(fn, source)] = (
                    self.score.labels(fn, source),
                    positive,
                    negative,
                    squared,
                )
            child[0].observe(score)
            if score >= 0.0:
                child[1].inc(score)
            else:
                child[2].inc(-score)
            child[3].inc(score * score)


def _us_per_op(stmt: object, number: int) -> float:
    return timeit.timeit(stmt, number=number) / number * 1e6  # type: ignore[arg-type]


def run(calls: int = 20_000, rounds: int = 5) -> BenchResult:
    result = BenchResult("metrics_hot_path")
    plain, client = GatewayMetrics(), ClientPythonMetrics()
    times: dict[str, dict[str, list[float]]] = {"call": {}, "request": {}}
    for _ in range(rounds):  # alternating, so a busy second on this shared machine hits both
        for name, m in (("plain", plain), ("client_python", client)):
            times["call"].setdefault(name, []).append(
                _us_per_op(lambda m=m: m.observe_call("trivial", "bench", "ok", 0.0004, 1.0), calls)
            )
            times["request"].setdefault(name, []).append(
                _us_per_op(lambda m=m: m.observe_request("/score", 200, 0.0012), calls)
            )
    for what, by in times.items():
        new, old = median(by["plain"]), median(by["client_python"])
        label = {"call": "observe_call", "request": "observe_request"}[what]
        result.rows.append(Row("metrics", f"{label} us, plain", new, fmt="{:.2f}"))
        result.rows.append(Row("metrics", f"{label} us, client_python", old, fmt="{:.2f}"))
        result.rows.append(Row("metrics", f"{label} plain / client_python", new / old, fmt="{:.3f}"))
    result.notes.append(f"{calls} updates per round, {rounds} alternating rounds, medians")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print_result(run(args.calls, args.rounds))


if __name__ == "__main__":
    main()
