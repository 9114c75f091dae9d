"""Scaling a pool on Ray by its queue: the decision (`Scaler`) and the signal (`queue_depth`).

The signal is SGLang's `sglang:num_queue_reqs` (requests waiting, not yet running), which our CPU model server
exports too, summed over the pool's replicas: the same rule as the Kubernetes autoscalers (docs/deploy.md).
"""

from __future__ import annotations

import math
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass

from rewardfleet.services.fleet.on_ray.config import RayAutoscale

QUEUE_METRIC = "sglang:num_queue_reqs"


def queue_depth(metrics_text: str) -> float:
    """The sum of `sglang:num_queue_reqs` samples in a Prometheus text exposition (0 when absent)."""
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith(QUEUE_METRIC) and (
            len(line) == len(QUEUE_METRIC) or line[len(QUEUE_METRIC)] in " {"
        ):
            try:
                total += float(line.rsplit(None, 1)[1])
            except (IndexError, ValueError):
                continue
    return total


def pool_queue(urls: Iterable[str], timeout_s: float = 2.0) -> float | None:
    """Requests waiting over the replicas at `urls`; None when one does not answer (no decision then)."""
    total = 0.0
    for url in urls:
        try:
            with urllib.request.urlopen(f"{url}/metrics", timeout=timeout_s) as resp:
                total += queue_depth(resp.read().decode(errors="replace"))
        except OSError:
            return None
    return total


@dataclass
class Scaler:
    """How many replicas a pool should have now, one step at a time, with cool-downs."""

    rule: RayAutoscale
    changed_at: float = -math.inf
    calm_since: float | None = None  # when the queue last went under the target

    def desired(self, current: int, queue: float, now: float) -> int:
        rule = self.rule
        want = min(rule.max_replicas, max(rule.min_replicas, math.ceil(queue / rule.target_queue)))
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
