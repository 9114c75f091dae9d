"""The gateway's eight hot metrics on client_python, defined and updated as GatewayMetrics did before they
moved to plain attributes (hot_path/plain_metrics.py): the reference
tests/gateway/hot_path/test_plain_metrics.py compares the exposition with, and the baseline
bench/metrics_hot_path.py times."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from rewardfleet.services.gateway.metrics import CALL_BUCKETS_S, NAMESPACE, REQUEST_BUCKETS_S, SCORE_BUCKETS

DRIFT = ["reward_fn", "data_source"]


class Reference:
    """The eight hot metrics on client_python, as GatewayMetrics defined and updated them."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        kw = {"namespace": NAMESPACE, "registry": r}
        self.requests = Counter(
            "gateway_requests",
            "HTTP requests answered, by route template and status code.",
            ["route", "status"],
            **kw,
        )
        self.request_duration = Histogram(
            "gateway_request_duration_seconds",
            "HTTP request duration, by route template.",
            ["route"],
            buckets=REQUEST_BUCKETS_S,
            **kw,
        )
        self.fn_duration = Histogram(
            "reward_fn_duration_seconds",
            "Reward function call duration (compute, without queueing).",
            ["reward_fn"],
            buckets=CALL_BUCKETS_S,
            **kw,
        )
        self.fn_outcomes = Counter(
            "reward_fn_outcomes",
            "Reward function calls by outcome (ok, error, timeout).",
            ["reward_fn", "outcome"],
            **kw,
        )
        self.score = Histogram(
            "reward_score",
            "Scores returned (status ok only), by function and data_source.",
            DRIFT,
            buckets=SCORE_BUCKETS,
            **kw,
        )
        self.positive = Counter(
            "reward_score_positive_sum",
            "Sum of the positive scores (status ok), by function and data_source.",
            DRIFT,
            **kw,
        )
        self.negative = Counter(
            "reward_score_negative_sum",
            "Sum of the absolute values of the negative scores (status ok), by function and data_source.",
            DRIFT,
            **kw,
        )
        self.squared = Counter(
            "reward_score_squared_sum",
            "Sum of the squared scores (status ok), for a variance; by function and data_source.",
            DRIFT,
            **kw,
        )

        # Label lookups take a lock: children bound once per label set, as GatewayMetrics did.
        self._request: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._call: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._score: dict[tuple[str, str], tuple[Any, ...]] = {}

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
            # all four bound on the first score of a label set
            child = self._score.get((fn, source))
            if child is None:
                child = self._score[(fn, source)] = tuple(
                    m.labels(fn, source) for m in (self.score, self.positive, self.negative, self.squared)
                )
            child[0].observe(score)
            if score >= 0.0:
                child[1].inc(score)
            else:
                child[2].inc(-score)
            child[3].inc(score * score)
