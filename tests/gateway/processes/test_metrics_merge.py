"""One exposition from several processes' own: counters and histograms add up, gauges by their policy."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rewardfleet.services.gateway.processes.metrics_merge import merged_exposition


def process_exposition(i: int) -> str:
    registry = CollectorRegistry()
    Counter("rewardfleet_calls", "c", ["fn"], registry=registry).labels("a").inc(i + 1)
    Gauge("rewardfleet_gateway_inflight_requests", "g", registry=registry).set(2 + i)
    Gauge("rewardfleet_judge_pool_degraded", "g", ["pool"], registry=registry).labels("judge").set(i % 2)
    Gauge("rewardfleet_shadow_kappa", "g", ["reward_fn", "pool"], registry=registry).labels("j", "p").set(
        0.2 * (i + 1)
    )
    hist = Histogram("rewardfleet_seconds", "h", registry=registry, buckets=(0.1, 1.0))
    hist.observe(0.05 * (i + 1))
    hist.observe(0.5)
    if i == 0:  # a series only one process has (a function only it has run)
        Counter("rewardfleet_only", "o", registry=registry).inc(7)
    return generate_latest(registry).decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_three_processes_merge_as_one() -> None:
    merged = samples(merged_exposition([process_exposition(i) for i in range(3)]).decode())
    assert merged[("rewardfleet_calls_total", (("fn", "a"),))] == 1 + 2 + 3
    assert merged[("rewardfleet_gateway_inflight_requests", ())] == 2 + 3 + 4
    assert merged[("rewardfleet_judge_pool_degraded", (("pool", "judge"),))] == 1  # max, not a count
    kappa = merged[("rewardfleet_shadow_kappa", (("pool", "p"), ("reward_fn", "j")))]
    assert abs(kappa - 0.4) < 1e-9  # the mean of 0.2, 0.4, 0.6
    assert merged[("rewardfleet_seconds_bucket", (("le", "0.1"),))] == 2  # 0.05 and 0.10
    assert merged[("rewardfleet_seconds_bucket", (("le", "1.0"),))] == 6
    assert merged[("rewardfleet_seconds_count", ())] == 6
    assert abs(merged[("rewardfleet_seconds_sum", ())] - (0.05 + 0.10 + 0.15 + 1.5)) < 1e-9
    assert merged[("rewardfleet_only_total", ())] == 7


def test_created_keeps_the_earliest() -> None:
    texts = [process_exposition(i) for i in range(2)]
    created = [samples(t)[("rewardfleet_calls_created", (("fn", "a"),))] for t in texts]
    merged = samples(merged_exposition(texts).decode())
    assert merged[("rewardfleet_calls_created", (("fn", "a"),))] == min(created)


def test_one_process_is_unchanged() -> None:
    text = process_exposition(1)
    assert samples(merged_exposition([text]).decode()) == samples(text)
