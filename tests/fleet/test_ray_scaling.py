"""The Ray engine's scaling decision and its signals, without a cluster (tests/fleet/on_ray: for real)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rewardfleet.services.fleet.on_ray.config import RayAutoscale, RayGateway, RayGatewayAutoscale
from rewardfleet.services.fleet.on_ray.scaling import INFLIGHT_METRIC, Scaler, metric_sum, queue_depth

RULE = RayAutoscale(min_replicas=1, max_replicas=3, target_queue=4, up_cooldown_s=10, down_cooldown_s=30)


def test_up_one_at_a_time_after_the_cool_down_and_never_past_the_bound() -> None:
    scaler = Scaler(RULE)
    assert scaler.desired(1, load=40, now=0) == 2
    assert scaler.desired(2, load=40, now=5) == 2  # cool-down
    assert scaler.desired(2, load=40, now=10) == 3
    assert scaler.desired(3, load=400, now=100) == 3  # max_replicas
    assert scaler.desired(1, load=4, now=200) == 1  # at the target: enough


def test_down_only_after_a_whole_calm_period_each_step() -> None:
    scaler = Scaler(RULE)
    assert scaler.desired(3, load=0, now=0) == 3
    assert scaler.desired(3, load=0, now=29) == 3
    assert scaler.desired(3, load=9, now=29.5) == 3  # ceil(9/4) = 3: the calm period starts again
    assert scaler.desired(3, load=0, now=30) == 3
    assert scaler.desired(3, load=0, now=60) == 2
    assert scaler.desired(2, load=0, now=61) == 2
    assert scaler.desired(2, load=0, now=90) == 1
    assert scaler.desired(1, load=0, now=1000) == 1  # min_replicas


def test_below_the_minimum_it_grows_whatever_the_queue() -> None:
    scaler = Scaler(RayAutoscale(min_replicas=2, max_replicas=4, up_cooldown_s=0))
    assert scaler.desired(1, load=0, now=0) == 2


def test_bounds_are_checked() -> None:
    with pytest.raises(ValidationError, match="max_replicas 1 < min_replicas 2"):
        RayAutoscale(min_replicas=2, max_replicas=1)


def test_queue_depth_sums_the_metric_only() -> None:
    text = (
        "# HELP sglang:num_queue_reqs Requests waiting\n# TYPE sglang:num_queue_reqs gauge\n"
        'sglang:num_queue_reqs{model_name="a"} 3.0\nsglang:num_queue_reqs{model_name="b"} 2.0\n'
        "sglang:num_queue_reqs_total 99\nsglang:num_running_reqs 7\n"
    )
    assert queue_depth(text) == 5.0
    assert queue_depth("") == 0.0


def test_gateways_follow_their_requests_in_flight() -> None:
    rule = RayGatewayAutoscale(min_replicas=1, max_replicas=4, target_inflight=100, down_cooldown_s=60)
    scaler = Scaler(rule)
    assert scaler.desired(1, load=250, now=0) == 2  # ceil(250 / 100) = 3, one step at a time
    assert scaler.desired(2, load=250, now=20) == 3  # up_cooldown_s 15 by default
    assert scaler.desired(3, load=10, now=30) == 3
    assert scaler.desired(3, load=10, now=90) == 2


def test_in_flight_is_summed_over_a_gateways_processes() -> None:
    text = (
        "# TYPE rewardfleet_gateway_inflight_requests gauge\n"
        'rewardfleet_gateway_inflight_requests{process="0"} 40.0\n'
        'rewardfleet_gateway_inflight_requests{process="1"} 2.0\n'
        "rewardfleet_gateway_inflight_requests_other 5\n"
    )
    assert metric_sum(text, INFLIGHT_METRIC) == 42.0


def test_gateway_section() -> None:
    assert RayGateway(replicas=1, autoscale={"min_replicas": 2, "max_replicas": 3}).start_replicas == 2
    assert RayGateway(replicas=9, autoscale={"max_replicas": 3}).start_replicas == 3
    assert RayGateway(replicas=2, autoscale={"max_replicas": 5}).most_replicas == 5
    with pytest.raises(ValidationError, match="gateways that scale take a free port each"):
        RayGateway(port=8000, autoscale={})


def test_a_scaled_away_gateway_waits_out_the_clients_discovery_cache() -> None:
    from rewardfleet.services.client import ray_discovery
    from rewardfleet.services.fleet.on_ray import autoscaling

    assert autoscaling.DISCOVERY_CACHE_S == ray_discovery.CACHE_S
