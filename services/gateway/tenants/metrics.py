"""Per-tenant Prometheus series.

`tenant` is a label only for configured tenants (a refused key has no series), `run` only for a tenant's first
`max_run_labels` run labels (then "other"): bounded cardinality."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from rewardfleet.services.gateway.metrics import NAMESPACE

WAIT_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class TenantMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "tenant_requests",
            "Authenticated work requests, by tenant and run label (this replica).",
            ["tenant", "run"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.pool_calls = Counter(
            "tenant_pool_calls",
            "External-pool calls forwarded for the tenant, by the caller's run label (this replica).",
            ["tenant", "run"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.samples = Counter(
            "tenant_samples",
            "Samples admitted for scoring, by tenant (this replica).",
            ["tenant"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.refusals = Counter(
            "tenant_quota_refusals",
            "Requests refused with 429 TenantQuotaExceeded, by tenant and quota.",
            ["tenant", "quota"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.inflight = Gauge(
            "tenant_samples_in_flight",
            "Samples being scored for the tenant on this replica.",
            ["tenant"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.spend = Counter(
            "tenant_spend_usd",
            "Dollars of judge spend charged to the tenant (priced fleet pools; this replica's share).",
            ["tenant"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.fair_wait = Histogram(
            "tenant_fair_wait_seconds",
            "Time a call waited in a saturated pool's fair queue, by tenant and function.",
            ["tenant", "reward_fn"],
            namespace=NAMESPACE,
            buckets=WAIT_BUCKETS_S,
            registry=registry,
        )
        self.fair_queued = Gauge(
            "tenant_fair_queued",
            "Calls waiting in fair queues for the tenant on this replica.",
            ["tenant"],
            namespace=NAMESPACE,
            registry=registry,
        )

    def fair_queues(self, tenant: str) -> dict[str, Any]:
        """The tenant's fair-queue waits on this replica (from its series here): calls waiting now, and per
        queue (`reward_fn` label) the waits ended and their total seconds."""
        waiting = 0.0
        for family in self.fair_queued.collect():
            waiting += sum(s.value for s in family.samples if s.labels.get("tenant") == tenant)
        queues: dict[str, dict[str, float]] = {}
        for family in self.fair_wait.collect():
            for sample in family.samples:
                if sample.labels.get("tenant") != tenant or sample.name.endswith("_created"):
                    continue
                queue = queues.setdefault(sample.labels["reward_fn"], {"waits": 0, "wait_s_total": 0.0})
                if sample.name.endswith("_count"):
                    queue["waits"] = int(sample.value)
                elif sample.name.endswith("_sum"):
                    queue["wait_s_total"] = sample.value
        return {"waiting_now": int(waiting), "queues": dict(sorted(queues.items()))}
