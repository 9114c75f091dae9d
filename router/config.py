"""`RouterConfig`: the settings of one pool's sglang-router, named after the 0.3.2 binary's flags.

Every field maps to one `sglang-router launch` flag of the same name (underscores for dashes), so a reader of
the binary's `--help` recognises each one; defaults are the binary's, except two bind addresses that default
to loopback here (the binary binds 0.0.0.0). Duration and size fields carry their unit as the binary spells it
(`*_secs`, `*_ms`, `max_payload_size` in bytes).

The Prometheus exporter deserves care: the binary *always* starts it (29000 unless told otherwise) and panics
at start when the port is taken, so every router of a fleet needs its own `prometheus_port`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from rewardfleet.services.common.api_keys import check_api_keys
from rewardfleet.services.common.hosts import connect_host, is_wildcard

Policy = Literal["random", "round_robin", "cache_aware", "power_of_two", "manual"]
# manual: a request's `X-SMG-Routing-Key` header pins it to one worker (a new key goes to a worker chosen by
# `assignment_mode`; a key idle for `max_idle_secs` is forgotten); requests without the header go at random.
LogLevel = Literal["debug", "info", "warn", "error"]


class RouterConfig(BaseModel):
    """One sglang-router in front of one model pool (outside IGW mode the router ignores `model`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Where the router listens.
    host: str = "127.0.0.1"  # binary default: 0.0.0.0
    port: int = Field(default=30000, ge=1, le=65535)

    # Workers: static URLs and/or Kubernetes discovery. Workers can also be added at run time (/workers).
    worker_urls: list[str] = Field(default_factory=list)
    worker_startup_timeout_secs: int = Field(default=1800, ge=1)
    worker_startup_check_interval: int = Field(default=30, ge=1)  # seconds, as the binary names it

    policy: Policy = "cache_aware"
    assignment_mode: Literal["random", "min_load", "min_group"] = "random"  # manual policy only
    max_idle_secs: int = Field(default=14_400, ge=1)  # manual policy: seconds before an idle key is forgotten
    max_payload_size: int = Field(default=512 * 1024 * 1024, ge=1)  # bytes

    # Health checks of the workers.
    health_check_interval_secs: int = Field(default=60, ge=1)
    health_check_timeout_secs: int = Field(default=5, ge=1)
    health_failure_threshold: int = Field(default=3, ge=1)
    health_success_threshold: int = Field(default=2, ge=1)
    health_check_endpoint: str = "/health"
    disable_health_check: bool = False

    # Retries (on 408/429/5xx and connection errors, to another worker).
    retry_max_retries: int = Field(default=5, ge=1)
    retry_initial_backoff_ms: int = Field(default=50, ge=0)
    retry_max_backoff_ms: int = Field(default=30_000, ge=0)
    retry_backoff_multiplier: float = Field(default=1.5, ge=1.0)
    retry_jitter_factor: float = Field(default=0.2, ge=0.0, le=1.0)
    disable_retries: bool = False

    # Circuit breaker per worker (counts every non-2xx answer, 4xx included, as a failure).
    cb_failure_threshold: int = Field(default=10, ge=1)
    cb_success_threshold: int = Field(default=3, ge=1)
    cb_timeout_duration_secs: int = Field(default=60, ge=1)
    cb_window_duration_secs: int = Field(default=120, ge=1)
    disable_circuit_breaker: bool = False

    # Request handling and admission.
    request_timeout_secs: int = Field(default=1800, ge=1)
    shutdown_grace_period_secs: int = Field(default=180, ge=0)
    max_concurrent_requests: int = -1  # -1 disables the limiter
    queue_size: int = Field(default=100, ge=0)  # 0: answer 429 at once when the limit is reached
    queue_timeout_secs: int = Field(default=60, ge=1)
    rate_limit_tokens_per_second: int | None = Field(default=None, ge=1)

    # Key the router sends to the workers. Never printed: `rewardfleet.services.common.redact` hides it.
    api_key: SecretStr | None = None

    # Kubernetes service discovery (pods must be Running and Ready; RBAC get/list/watch pods).
    service_discovery: bool = False
    selector: dict[str, str] = Field(default_factory=dict)
    service_discovery_namespace: str | None = None
    service_discovery_port: int = Field(default=80, ge=1, le=65535)

    # Metrics (`smg_*` names) on their own listener.
    prometheus_host: str = "127.0.0.1"  # binary default: 0.0.0.0
    prometheus_port: int = Field(default=29000, ge=1, le=65535)

    log_level: LogLevel = "info"
    # Plain-text daily files `smg.YYYY-MM-DD` there; the console output always has ANSI colours.
    log_dir: Path | None = None

    @field_validator("host", "prometheus_host")
    @classmethod
    def _check_host(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must be a host name or IP address, not empty")
        if any(c.isspace() for c in value) or "/" in value:
            raise ValueError(f"{value!r} is not a host name or IP address")
        return value

    @field_validator("worker_urls")
    @classmethod
    def _check_worker_urls(cls, urls: list[str]) -> list[str]:
        cleaned: list[str] = []
        for url in urls:
            parts = urlsplit(url.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{url!r} is not an http(s)://host:port URL")
            try:
                port = parts.port
            except ValueError:
                raise ValueError(f"{url!r} has an invalid port") from None
            if port is None:
                raise ValueError(f"{url!r} has no port")
            if parts.path not in ("", "/") or parts.query or parts.fragment:
                raise ValueError(f"{url!r} must be a bare server URL (no path, query or fragment)")
            normalised = f"{parts.scheme}://{parts.netloc}"
            if normalised in cleaned:
                raise ValueError(f"{url!r} is listed twice")
            cleaned.append(normalised)
        return cleaned

    @field_validator("health_check_endpoint")
    @classmethod
    def _check_endpoint(cls, value: str) -> str:
        if not value.startswith("/") or any(c.isspace() for c in value):
            raise ValueError(f"{value!r} must be a path starting with '/'")
        return value

    @field_validator("max_concurrent_requests")
    @classmethod
    def _check_max_concurrent(cls, value: int) -> int:
        if value != -1 and value < 1:
            raise ValueError("must be -1 (no limit) or at least 1")
        return value

    @field_validator("selector")
    @classmethod
    def _check_selector(cls, selector: dict[str, str]) -> dict[str, str]:
        # The binary takes `--selector k=v k2=v2` and splits a single item on spaces, so neither side may hold
        # whitespace or '='.
        for key, value in selector.items():
            for part, what in ((key, "key"), (value, "value")):
                if not part or "=" in part or any(c.isspace() for c in part):
                    raise ValueError(f"label {what} {part!r} must be non-empty, without '=' or whitespace")
        return selector

    @field_validator("api_key")
    @classmethod
    def _check_api_key(cls, value: SecretStr | None) -> SecretStr | None:
        # The model servers behind the router refuse a short key at start-up; refuse it here first.
        if value is not None:
            check_api_keys([value.get_secret_value()], "api_key")
        return value

    @model_validator(mode="after")
    def _check_combinations(self) -> RouterConfig:
        if self.retry_max_backoff_ms < self.retry_initial_backoff_ms:
            raise ValueError(
                f"retry_max_backoff_ms ({self.retry_max_backoff_ms}) is below "
                f"retry_initial_backoff_ms ({self.retry_initial_backoff_ms})"
            )
        if self.health_check_timeout_secs > self.health_check_interval_secs:
            raise ValueError(
                f"health_check_timeout_secs ({self.health_check_timeout_secs}) exceeds "
                f"health_check_interval_secs ({self.health_check_interval_secs})"
            )
        if self.service_discovery and not self.selector:
            raise ValueError("service_discovery is enabled but selector is empty")
        if self.selector and not self.service_discovery:
            raise ValueError("selector is set but service_discovery is disabled")
        if self.service_discovery_namespace is not None and not self.service_discovery:
            raise ValueError("service_discovery_namespace is set but service_discovery is disabled")
        if self.prometheus_port == self.port and _same_listener(self.host, self.prometheus_host):
            raise ValueError(f"prometheus_port ({self.prometheus_port}) is the router's own port")
        return self

    @property
    def connect_host(self) -> str:
        """The host a client on this machine dials: a wildcard bind address becomes loopback."""
        return connect_host(self.host)

    @property
    def address(self) -> str:
        """Bare `host:port`, the form verl passes as `reward_router_address`."""
        return f"{self.connect_host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"


def _same_listener(host_a: str, host_b: str) -> bool:
    return host_a == host_b or is_wildcard(host_a) or is_wildcard(host_b)
