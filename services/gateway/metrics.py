"""The gateway's Prometheus metrics, on an explicit `CollectorRegistry` (one per app, so tests stay isolated).

Names are a contract with dashboards and alerts: change them only together with deploy/.
Labels are bounded: `route` is the route template, `reward_fn` a loaded function name, `data_source` a name
from the dispatch table, the matching glob, or "other".
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import Scope

from rewardfleet.reward_fns.contract import GUARD_NAMES
from rewardfleet.services.common.body_limits import refusals_counter
from rewardfleet.services.gateway.hot_path.plain_metrics import (
    CounterChild,
    HistogramChild,
    PlainCounter,
    PlainHistogram,
)

NAMESPACE = "rewardfleet"
REQUEST_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CALL_BUCKETS_S = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
)
SCORE_BUCKETS = (-10.0, -5.0, -2.0, -1.0, -0.5, -0.1, 0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 2.0, 5.0, 10.0)
UNMATCHED_ROUTE = "unmatched"
# Error type of a refusal -> the bounded `reason` label.
REJECTION_REASONS = {"Overloaded": "overload", "Draining": "draining"}


class GatewayMetrics:
    """The gateway's metrics. What every request and every reward call updates (requests, request duration,
    call duration and outcome, score histogram, drift sums) is counted in plain attributes
    (hot_path/plain_metrics.py: no lock, families built at scrape time; updated on the event-loop thread
    only); the rest, rare or updated elsewhere, stays on client_python."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.requests = PlainCounter(
            "gateway_requests",
            "HTTP requests answered, by route template and status code.",
            ["route", "status"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.request_duration = PlainHistogram(
            "gateway_request_duration_seconds",
            "HTTP request duration, by route template.",
            ["route"],
            namespace=NAMESPACE,
            buckets=REQUEST_BUCKETS_S,
            registry=r,
        )
        # In-flight requests are a plain int read at scrape time: no locked update on the hot path.
        self.inflight_count = 0
        self.inflight = Gauge(
            "gateway_inflight_requests",
            "HTTP requests being handled.",
            namespace=NAMESPACE,
            registry=r,
        )
        self.inflight.set_function(lambda: self.inflight_count)
        self.pool_tokens = pool_tokens_counter(r)
        self.pool_queue_depth = Gauge(
            "gateway_pool_queue_depth",
            "Sync reward calls submitted and waiting for a worker process.",
            namespace=NAMESPACE,
            registry=r,
        )
        self.fn_duration = PlainHistogram(
            "reward_fn_duration_seconds",
            "Reward function call duration (compute, without queueing).",
            ["reward_fn"],
            namespace=NAMESPACE,
            buckets=CALL_BUCKETS_S,
            registry=r,
        )
        self.fn_outcomes = PlainCounter(
            "reward_fn_outcomes",
            "Reward function calls by outcome (ok, error, timeout).",
            ["reward_fn", "outcome"],
            namespace=NAMESPACE,
            registry=r,
        )
        # Scores can be negative, so no `_sum` here (OpenMetrics rule, as client_python): use the buckets.
        self.score = PlainHistogram(
            "reward_score",
            "Scores returned (status ok only), by function and data_source.",
            ["reward_fn", "data_source"],
            namespace=NAMESPACE,
            buckets=SCORE_BUCKETS,
            registry=r,
        )
        # Drift: the histogram has no `_sum`, and one counter cannot hold a sum that goes down, so the signed
        # sum is split into two monotonic counters. Mean over a window (docs/advanced_rewards.md):
        # (increase(positive) - increase(negative)) / increase(rewardfleet_reward_score_count).
        drift_labels = ["reward_fn", "data_source"]
        self.score_positive_sum = PlainCounter(
            "reward_score_positive_sum",
            "Sum of the positive scores (status ok), by function and data_source.",
            drift_labels,
            namespace=NAMESPACE,
            registry=r,
        )
        self.score_negative_sum = PlainCounter(
            "reward_score_negative_sum",
            "Sum of the absolute values of the negative scores (status ok), by function and data_source.",
            drift_labels,
            namespace=NAMESPACE,
            registry=r,
        )
        self.score_squared_sum = PlainCounter(
            "reward_score_squared_sum",
            "Sum of the squared scores (status ok), for a variance; by function and data_source.",
            drift_labels,
            namespace=NAMESPACE,
            registry=r,
        )
        # Refusals at the door and answers without a call: rare or cheap events, counted directly.
        self.admission_rejections = Counter(
            "gateway_admission_rejections",
            "Work requests refused by admission, by reason: overload (429) or draining (503).",
            ["reason"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.result_cache_answers = Counter(
            "gateway_result_cache_answers",
            "Samples answered without a call of their own (idempotency): hit = from the result cache, "
            "join = from a running call of the same sample.",
            ["how"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.body_refusals = refusals_counter("gateway_request_body_refusals", NAMESPACE, r)

        # A guard before a judge answered (reward_fns/judging/guards.py): the label is one of GUARD_NAMES,
        # whatever a function writes into extra["guard"].
        self.judge_guards = Counter(
            "judge_guard",
            "Answers scored by a guard without asking the judge (extra.guard), by function and guard.",
            ["reward_fn", "guard"],
            namespace=NAMESPACE,
            registry=r,
        )
        # Pairs a group judge asked in both orders (reward_fns/groups/pairwise_judge.py): the share with
        # verdicts that disagree is the judge's position bias.
        self.group_judge_swapped_pairs = Counter(
            "group_judge_swapped_pairs",
            "Pairs a group judge judged in both orders, by group function and whether the verdicts agreed.",
            ["group_fn", "verdicts"],
            namespace=NAMESPACE,
            registry=r,
        )
        for reason in REJECTION_REASONS.values():
            self.admission_rejections.labels(reason)
        # Bound once: every cache hit counts here.
        self._cache_answer_children = {how: self.result_cache_answers.labels(how) for how in ("hit", "join")}
        # Label lookups build tuples of strings; the hot path reuses the children instead.
        self._request_children: dict[tuple[str, int], tuple[CounterChild, HistogramChild]] = {}
        self._call_children: dict[tuple[str, str], tuple[HistogramChild, CounterChild]] = {}
        self._score_children: dict[
            tuple[str, str], tuple[HistogramChild, CounterChild, CounterChild, CounterChild]
        ] = {}

    def admission_rejected(self, error_type: str) -> None:
        self.admission_rejections.labels(REJECTION_REASONS.get(error_type, "overload")).inc()

    def result_cache_answered(self, how: Literal["hit", "join"]) -> None:
        self._cache_answer_children[how].inc()

    # RequestObserver (rewardfleet.services.common.request_metrics): in-flight count, then route and status.
    def request_started(self, scope: Scope) -> None:
        self.inflight_count += 1

    def response_started(self, scope: Scope, status: int, elapsed_s: float) -> None:
        pass

    def request_finished(self, scope: Scope, status: int, elapsed_s: float) -> None:
        self.inflight_count -= 1
        # The template ("/score"), never the raw path: bounded label values.
        route = getattr(scope.get("route"), "path", None) or UNMATCHED_ROUTE
        self.observe_request(route, status, elapsed_s)

    def body_refused(self, reason: str) -> None:
        self.body_refusals.labels(reason).inc()

    def judge_guard_hit(self, reward_fn: str, extra: dict[str, object]) -> None:
        guard = extra.get("guard")
        if isinstance(guard, str) and guard in GUARD_NAMES:
            self.judge_guards.labels(reward_fn, guard).inc()

    def group_judge_swaps(self, group_fn: str, extra: dict[str, object]) -> None:
        """Count a judged group's swapped pairs from its `extra["group_judge"]` (once per group)."""
        summary = extra.get("group_judge")
        if not isinstance(summary, dict):
            return
        pairs, disagreed = summary.get("swapped_pairs"), summary.get("swap_disagreements")
        if isinstance(pairs, int) and isinstance(disagreed, int) and 0 <= disagreed <= pairs:
            self.group_judge_swapped_pairs.labels(group_fn, "disagree").inc(disagreed)
            self.group_judge_swapped_pairs.labels(group_fn, "agree").inc(pairs - disagreed)

    def observe_request(self, route: str, status: int, duration_s: float) -> None:
        children = self._request_children.get((route, status))
        if children is None:
            children = (self.requests.labels(route, str(status)), self.request_duration.labels(route))
            self._request_children[(route, status)] = children
        children[0].inc()
        children[1].observe(duration_s)

    def count_pool_tokens(self, reward_fn: str, pool: str, prompt: int, completion: int) -> None:
        self.pool_tokens.labels(reward_fn, pool, "prompt").inc(prompt)
        self.pool_tokens.labels(reward_fn, pool, "completion").inc(completion)

    def observe_call(
        self, reward_fn: str, data_source: str, outcome: str, compute_s: float, score: float | None
    ) -> None:
        children = self._call_children.get((reward_fn, outcome))
        if children is None:
            children = (self.fn_duration.labels(reward_fn), self.fn_outcomes.labels(reward_fn, outcome))
            self._call_children[(reward_fn, outcome)] = children
        children[0].observe(compute_s)
        children[1].inc()
        if outcome == "ok" and score is not None:
            child = self._score_children.get((reward_fn, data_source))
            if child is None:
                child = self._score_children[(reward_fn, data_source)] = (
                    self.score.labels(reward_fn, data_source),
                    self.score_positive_sum.labels(reward_fn, data_source),
                    self.score_negative_sum.labels(reward_fn, data_source),
                    self.score_squared_sum.labels(reward_fn, data_source),
                )
            child[0].observe(score)
            if score >= 0.0:
                child[1].inc(score)
            else:
                child[2].inc(-score)
            child[3].inc(score * score)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def pool_tokens_counter(registry: CollectorRegistry) -> Counter:
    """Judge tokens per function, pool and type (prompt, completion): fleet pools' as the judge's result
    reports them (`extra.usage` of the server's `usage` / `meta_info`), external pools' from each answer."""
    return Counter(
        "pool_tokens",
        "Tokens a judge pool reported (usage / meta_info), by function, pool and type (prompt, completion).",
        ["reward_fn", "pool", "type"],
        namespace=NAMESPACE,
        registry=registry,
    )


class ExternalPoolMetrics:
    def __init__(self, registry: CollectorRegistry, tokens: Counter | None = None) -> None:
        labels = ["reward_fn", "pool"]
        # Shared with GatewayMetrics.pool_tokens (one metric name per registry) when the gateway passes it.
        self.tokens = tokens if tokens is not None else pool_tokens_counter(registry)
        self.requests = Counter(
            "pool_requests",
            "Requests forwarded to an external pool, by function, pool and final HTTP status.",
            [*labels, "status"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.rate_limited = Counter(
            "pool_rate_limited",
            "429 answers from an external pool (each one backed off and retried or returned).",
            labels,
            namespace=NAMESPACE,
            registry=registry,
        )
        self.budget_wait = Counter(
            "pool_budget_wait_seconds",
            "Seconds requests waited for their function's RPM/TPM budget.",
            labels,
            namespace=NAMESPACE,
            registry=registry,
        )
