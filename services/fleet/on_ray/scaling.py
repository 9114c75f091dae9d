"""Scaling on Ray: the decision (`Scaler`) and the signals (a pool's queue, the gateways' requests in flight).

A pool follows SGLang's `sglang:num_queue_reqs` (requests waiting, not yet running; our CPU model server
exports it too) summed over its replicas; the gateways follow `rewardfleet_gateway_inflight_requests` summed
over them: the Kubernetes autoscalers' rules (docs/deploy.md).
"""

from __future__ import annotations

import math
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rewardfleet.services.fleet.on_ray.config import RayAutoscale, RayGatewayAutoscale

QUEUE_METRIC = "sglang:num_queue_reqs"
INFLIGHT_METRIC = "rewardfleet_gateway_inflight_requests"


def metric_sum(metrics_text: str, name: str) -> float:
    """The sum of the samples of metric `name` in a Prometheus text exposition (0 when absent)."""
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {"):
            try:
                total += float(line.rsplit(None, 1)[1])
            except (IndexError, ValueError):
                continue
    return total


def queue_depth(metrics_text: str) -> float:
    """Requests waiting in one model server's exposition."""
    return metric_sum(metrics_text, QUEUE_METRIC)


def _scrape(url: str, headers: Mapping[str, str], timeout_s: float) -> str:
    request = urllib.request.Request(f"{url}/metrics", headers=dict(headers))
    with urllib.request.urlopen(request, timeout=timeout_s) as resp:
        return str(resp.read().decode(errors="replace"))


def pool_queue(urls: Iterable[str], timeout_s: float = 2.0) -> float | None:
    """Requests waiting over the replicas at `urls`; None when one does not answer (no decision then)."""
    total = 0.0
    for url in urls:
        try:
            total += queue_depth(_scrape(url, {}, timeout_s))
        except OSError:
            return None
    return total


def gateways_inflight(
    urls: Iterable[str], headers: Mapping[str, str], timeout_s: float = 2.0
) -> float | None:
    """Requests in flight over the gateways at `urls`, less each one's own scrape; None when one does not
    answer."""
    total = 0.0
    for url in urls:
        try:
            total += max(0.0, metric_sum(_scrape(url, headers, timeout_s), INFLIGHT_METRIC) - 1.0)
        except OSError:
            return None
    return total


@dataclass
class Scaler:
    """How many replicas should run now, one step at a time, with cool-downs."""

    rule: RayAutoscale | RayGatewayAutoscale
    changed_at: float = -math.inf
    calm_since: float | None = None  # when the load last went under the target

    def desired(self, current: int, load: float, now: float) -> int:
        rule = self.rule
        want = min(rule.max_replicas, max(rule.min_replicas, math.ceil(load / rule.target)))
        if want < current:
            if self.calm_since is None:
                self.calm_since = now
            if now - self.calm_since >= rule.down_cooldown_s:
                self.calm_since = now  # the next step down waits a whole calm period again
                return self._change(current - 1, now)
            return current
        self.calm_since = None
        if want > current and now - self.changed_at >= rule.up_cooldown_s:
            return self._change(current + 1, now)
        return current

    def _change(self, replicas: int, now: float) -> int:
        self.changed_at = now
        return replicas
