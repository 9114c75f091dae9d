"""The gateway command's arguments, and the settings they make: the same in one process and in each of N."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardfleet.services.common.cpus import usable_cpus

if TYPE_CHECKING:  # imported lazily below: `rewardfleet --help` stays fast
    from rewardfleet.services.gateway.config import GatewaySettings


def build_settings(
    config: Path | None,
    host: str | None,
    port: int | None,
    reward_fns: list[Path] | None,
    workers: int | None,
    state_url: str | None = None,
) -> GatewaySettings:
    """Flags win over REWARDFLEET_GATEWAY_* variables, which win over the YAML file; `--reward-fns` folders
    are appended to the file's `reward_fns_dirs`."""
    from rewardfleet.services.gateway.config import GatewaySettings

    overrides: dict[str, Any] = {"config_file": config}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    if workers is not None:
        overrides["workers"] = workers
    if state_url is not None:
        overrides["state_url"] = state_url
    settings = GatewaySettings(**overrides)
    if reward_fns:
        dirs = [*settings.loading.reward_fns_dirs, *reward_fns]
        settings = GatewaySettings(**{**overrides, "reward_fns_dirs": dirs})
    return settings


@dataclass
class GatewayArgs:
    config: str | None
    host: str | None
    port: int | None
    reward_fns: list[str] = field(default_factory=list)
    workers: int | None = None
    state_url: str | None = None


def parse_processes(value: str, reserved_cpus: int = 0) -> int:
    """`auto`: the CPUs this process may use, less those reserved (model servers' threads), at least 1."""
    if value == "auto":
        return max(1, usable_cpus() - reserved_cpus)
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"--processes must be a whole number >= 1 or 'auto', not {value!r}") from None
    if n < 1:
        raise ValueError(f"--processes must be >= 1, not {n}")
    return n


def listen_backlog(max_inflight_requests: int) -> int:
    """Connections the kernel may hold before they are accepted: a whole step's burst arrives at once, and a
    full queue drops or resets new connections. The kernel caps it at net.core.somaxconn."""
    return max(2048, min(max_inflight_requests, 65535))
