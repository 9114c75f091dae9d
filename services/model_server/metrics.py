"""Prometheus metrics of one model server, on an explicit registry (tests stay isolated, nothing global).

Names are `rewardfleet_model_server_<name>_<unit>`; labels are bounded: `endpoint` is one of the server's
route paths (anything else is "other"), `status` an HTTP status code, `operation` one of the batchers
("score", "embed", "generate", "next_token").
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import Scope

from rewardfleet.services.common.body_limits import refusals_counter
from rewardfleet.services.model_server.batcher import BatchStats

NAMESPACE = "rewardfleet_model_server"

_BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128, 256)
_QUEUE_WAIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_FORWARD_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class ModelServerMetrics:
    def __init__(self, endpoints: Iterable[str], registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._endpoints = frozenset(endpoints)
        r = self.registry
        self.requests = Counter(
            "requests",
            "HTTP requests answered, by endpoint and status code.",
            ["endpoint", "status"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.request_duration = Histogram(
            "request_duration_seconds",
            "Time from request start to response start, by endpoint.",
            ["endpoint"],
            namespace=NAMESPACE,
            buckets=_REQUEST_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "batch_size",
            "Requests per forward pass (after dropping cancelled ones).",
            ["operation"],
            namespace=NAMESPACE,
            buckets=_BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self.queue_wait = Histogram(
            "queue_wait_seconds",
            "Time a request waited in the batch queue before its forward pass started.",
            ["operation"],
            namespace=NAMESPACE,
            buckets=_QUEUE_WAIT_BUCKETS,
            registry=r,
        )
        self.forward = Histogram(
            "forward_seconds",
            "Wall time of one batched forward pass (tokenisation included).",
            ["operation"],
            namespace=NAMESPACE,
            buckets=_FORWARD_BUCKETS,
            registry=r,
        )
        self.queue_length = Gauge(
            "queue_length",
            "Requests waiting in the batch queue.",
            ["operation"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.running = Gauge(
            "running_requests",
            "Requests in the forward pass being computed.",
            ["operation"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.rejected = Counter(
            "queue_rejections",
            "Requests refused with 503 because the batch queue was full.",
            ["operation"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.body_refusals = refusals_counter("request_body_refusals", NAMESPACE, r)
        self.ready = Gauge(
            "ready", "1 once the model is loaded and warmed up.", namespace=NAMESPACE, registry=r
        )
        # SGLang's own names for its load, so one autoscaling rule (deploy/k8s/autoscaling) or dashboard
        # query reads a CPU pool and a GPU SGLang pool alike. Set from the batchers by the server.
        self.sglang_queue_reqs = Gauge(
            "sglang:num_queue_reqs", "Requests waiting (SGLang's name; all batch queues).", registry=r
        )
        self.sglang_running_reqs = Gauge(
            "sglang:num_running_reqs", "Requests being computed (SGLang's name).", registry=r
        )

    def endpoint_label(self, path: str) -> str:
        return path if path in self._endpoints else "other"

    # RequestObserver (rewardfleet.services.common.request_metrics): time to the response's start (a stream
    # lasts as long as its client reads), then one count by endpoint and status.
    def request_started(self, scope: Scope) -> None:
        pass

    def response_started(self, scope: Scope, status: int, elapsed_s: float) -> None:
        self.request_duration.labels(self.endpoint_label(scope["path"])).observe(elapsed_s)

    def request_finished(self, scope: Scope, status: int, elapsed_s: float) -> None:
        self.requests.labels(self.endpoint_label(scope["path"]), str(status)).inc()

    def body_refused(self, reason: str) -> None:
        self.body_refusals.labels(reason).inc()

    def observe_batch(self, operation: str, stats: BatchStats) -> None:
        self.batch_size.labels(operation).observe(stats.size)
        self.forward.labels(operation).observe(stats.forward_s)
        wait = self.queue_wait.labels(operation)
        for w in stats.queue_wait_s:
            wait.observe(w)

    def render(self) -> bytes:
        return generate_latest(self.registry)
