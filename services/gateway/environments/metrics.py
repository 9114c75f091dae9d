"""Session metrics.

Labels are bounded: `environment` is a loaded environment's name, `tenant` a configured tenant's (or "none"
without tenants), `tool` a tool the environment declares, `outcome` one of a few words.

`rewardfleet_environment_sessions_open` is read from the store (so it is the fleet's count, the same in every
process: the processes' merge takes its max) at every reap sweep, and after each open and close with the
in-process store.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from rewardfleet.services.gateway.metrics import NAMESPACE

NO_TENANT = "none"
OUTCOMES = ("ok", "tool_error", "invalid", "limit", "failed", "timeout")


def tenant_label(tenant: str) -> str:
    return tenant or NO_TENANT


class SessionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["environment", "tenant"]
        self.open = Gauge(
            "environment_sessions_open",
            "Sessions open (fleet-wide, read from the state store), by environment and tenant.",
            labels,
            namespace=NAMESPACE,
            registry=registry,
        )
        self.created = Counter(
            "environment_sessions_created",
            "Sessions opened (seeded and stored), by environment and tenant.",
            labels,
            namespace=NAMESPACE,
            registry=registry,
        )
        self.closed = Counter(
            "environment_sessions_closed",
            "Sessions closed by their caller, by environment and tenant.",
            labels,
            namespace=NAMESPACE,
            registry=registry,
        )
        self.expired = Counter(
            "environment_sessions_expired",
            "Sessions freed after their ttl or wall time, by environment and tenant.",
            labels,
            namespace=NAMESPACE,
            registry=registry,
        )
        self.tool_calls = Counter(
            "environment_tool_calls",
            "Tool calls, by environment, tool and outcome (ok, tool_error, invalid, limit, failed, timeout).",
            ["environment", "tool", "outcome"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self._open_seen: set[tuple[str, str]] = set()
        self._tool_call_children: dict[tuple[str, str, str], Counter] = {}

    def tool_call(self, env: str, tool: str, outcome: str) -> Counter:
        """The `tool_calls` child of these labels, kept after its first use (a call's labels are bounded: a
        loaded environment, one of its tools, an outcome)."""
        key = (env, tool, outcome)
        child = self._tool_call_children.get(key)
        if child is None:
            child = self._tool_call_children[key] = self.tool_calls.labels(env, tool, outcome)
        return child

    def set_open(self, counts: dict[tuple[str, str], int], environments: set[str]) -> None:
        """The store's live counts; a pair seen before and now absent goes to 0."""
        current: dict[tuple[str, str], int] = {}
        for (env, tenant), n in counts.items():
            if env in environments:  # the store may hold an environment this gateway does not load
                key = (env, tenant_label(tenant))
                current[key] = current.get(key, 0) + n
        for key in self._open_seen - set(current):
            self.open.labels(*key).set(0)
        for key, n in current.items():
            self.open.labels(*key).set(n)
        self._open_seen |= set(current)
