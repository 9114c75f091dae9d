"""State-store metrics, on the gateway's registry: latency of each store operation and its failures."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from rewardfleet.services.gateway.metrics import NAMESPACE

STORE_BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class StateStoreMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram(
            "state_store_duration_seconds",
            "Round trip of one state-store operation (a command, a pipeline or a Lua script), by operation.",
            ["op"],
            namespace=NAMESPACE,
            buckets=STORE_BUCKETS_S,
            registry=registry,
        )
        self.errors = Counter(
            "state_store_errors",
            "State-store operations that failed (unreachable, timed out, or an error reply), by operation.",
            ["op"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.reconnects = Counter(
            "state_store_reconnects",
            "Times the notification (pub/sub) connection was re-established after losing the store.",
            namespace=NAMESPACE,
            registry=registry,
        )
        self._children: dict[str, tuple[Histogram, Counter]] = {}

    def op(self, name: str) -> tuple[Histogram, Counter]:
        """(latency histogram, error counter) of one operation; label children are reused on the hot path."""
        children = self._children.get(name)
        if children is None:
            children = self._children[name] = (self.duration.labels(name), self.errors.labels(name))
        return children
