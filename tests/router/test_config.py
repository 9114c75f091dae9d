"""RouterConfig: defaults mirror the 0.3.2 binary, and bad settings fail with errors that name the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr, ValidationError
from sglang_router.launch_router import parse_router_args

from rewardfleet.router import RouterConfig

# Defaults deliberately different from the binary's: bind to loopback, not every interface.
OURS_NOT_BINARY = {"host", "prometheus_host"}


def test_defaults_are_the_binarys() -> None:
    binary = parse_router_args([])  # the binary's own argument parser, nothing given
    ours = RouterConfig()
    for name in RouterConfig.model_fields:
        if name in OURS_NOT_BINARY:
            continue
        expected = getattr(binary, name)
        if name == "api_key":
            assert ours.api_key is None and expected is None
        elif name == "worker_urls":
            assert ours.worker_urls == list(expected)
        else:
            assert getattr(ours, name) == expected, name
    assert ours.host == "127.0.0.1" and ours.prometheus_host == "127.0.0.1"


def _error_for(**settings: Any) -> str:
    with pytest.raises(ValidationError) as info:
        RouterConfig(**settings)
    return str(info.value)


@pytest.mark.parametrize(
    ("settings", "field", "message"),
    [
        ({"port": 0}, "port", "greater than or equal to 1"),
        ({"policy": "least_load"}, "policy", "round_robin"),
        ({"worker_urls": ["127.0.0.1:8000"]}, "worker_urls", "not an http(s)://host:port URL"),
        ({"worker_urls": ["http://127.0.0.1"]}, "worker_urls", "has no port"),
        ({"worker_urls": ["http://h:1/generate"]}, "worker_urls", "bare server URL"),
        ({"worker_urls": ["http://h:1", "http://h:1/"]}, "worker_urls", "listed twice"),
        ({"retry_jitter_factor": 1.5}, "retry_jitter_factor", "less than or equal to 1"),
        ({"retry_max_retries": 0}, "retry_max_retries", "greater than or equal to 1"),
        ({"max_concurrent_requests": 0}, "max_concurrent_requests", "-1 (no limit)"),
        ({"health_check_endpoint": "health"}, "health_check_endpoint", "starting with '/'"),
        ({"selector": {"app": "a b"}, "service_discovery": True}, "selector", "whitespace"),
        ({"api_key": " "}, "api_key", "must not be empty"),
        ({"host": "  "}, "host", "not empty"),
        ({"log_level": "trace"}, "log_level", "'debug'"),
        ({"unknown_flag": 1}, "unknown_flag", "Extra inputs are not permitted"),
    ],
)
def test_field_errors_name_the_field(settings: dict[str, Any], field: str, message: str) -> None:
    text = _error_for(**settings)
    assert field in text
    assert message in text


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"retry_initial_backoff_ms": 500, "retry_max_backoff_ms": 100}, "retry_max_backoff_ms (100)"),
        ({"health_check_interval_secs": 1, "health_check_timeout_secs": 5}, "health_check_timeout_secs (5)"),
        ({"service_discovery": True}, "selector is empty"),
        ({"selector": {"app": "judge"}}, "service_discovery is disabled"),
        ({"port": 31000, "prometheus_port": 31000}, "prometheus_port (31000)"),
    ],
)
def test_cross_field_errors(settings: dict[str, Any], message: str) -> None:
    assert message in _error_for(**settings)


def test_worker_urls_normalised_and_address_forms() -> None:
    cfg = RouterConfig(port=31000, worker_urls=["http://127.0.0.1:8001/", " http://127.0.0.1:8002"])
    assert cfg.worker_urls == ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
    assert cfg.address == "127.0.0.1:31000"  # bare host:port, as verl's reward_router_address
    assert cfg.url == "http://127.0.0.1:31000"
    assert RouterConfig(host="0.0.0.0", port=5).address == "127.0.0.1:5"
    assert RouterConfig(host="::", port=5, prometheus_host="::1").address == "[::1]:5"


def test_api_key_is_secret() -> None:
    cfg = RouterConfig(api_key=SecretStr("s3cret-value-4b2a9d1e"))
    assert "s3cret-value-4b2a9d1e" not in repr(cfg)
    assert "s3cret-value-4b2a9d1e" not in str(cfg.model_dump())
    assert cfg.api_key is not None and cfg.api_key.get_secret_value() == "s3cret-value-4b2a9d1e"
