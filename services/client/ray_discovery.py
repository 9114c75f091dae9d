"""The gateway of a fleet placed on the Ray cluster this process belongs to (`rewardfleet up --ray`).

`rewardfleet up --ray` publishes its gateways through a named actor (`ray.name`, default `rewardfleet`, in
namespace `ray.namespace`, default `rewardfleet`). A client names it with the address `ray:` (the defaults),
`ray:NAME` or `ray:NAMESPACE/NAME`, anywhere a gateway URL goes (`AsyncRewardClient`, `RewardClient`,
`$REWARDFLEET_URL`, verl's `gateway_url`); a client made from it sends its scoring posts round the gateways
published now and retries on another. Ray is imported only for such an address; a process not yet connected
to a cluster connects with `ray.init(address="auto")`. The answer is cached for `CACHE_S`.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
import time

PREFIX = "ray:"
DEFAULT_NAME = "rewardfleet"
DEFAULT_NAMESPACE = "rewardfleet"
CACHE_S = 10.0

_cache: dict[str, tuple[float, list[str]]] = {}
_lock = threading.Lock()


class GatewayNotOnRay(LookupError):
    """No fleet of that name publishes a gateway on this Ray cluster (or Ray is not installed)."""


def is_ray_address(address: str) -> bool:
    return address.strip().startswith(PREFIX)


def parse(address: str) -> tuple[str, str]:
    """`ray:`, `ray:NAME` or `ray:NAMESPACE/NAME` -> (namespace, name)."""
    rest = address.strip().removeprefix(PREFIX).strip("/")
    namespace, _, name = rest.rpartition("/")
    return namespace or DEFAULT_NAMESPACE, name or DEFAULT_NAME


def gateway_urls(address: str = PREFIX, timeout_s: float = 10.0) -> list[str]:
    """Every gateway URL the fleet named by `address` publishes now (the answer, or its absence, is cached
    for `CACHE_S`)."""
    namespace, name = parse(address)
    key = f"{namespace}/{name}"
    with _lock:
        cached = _cache.get(key)
    if cached is None or time.monotonic() - cached[0] >= CACHE_S:
        try:
            urls = _ask(namespace, name, timeout_s)
        except GatewayNotOnRay:
            with _lock:
                _cache[key] = (time.monotonic(), [])
            raise
        with _lock:
            _cache[key] = cached = (time.monotonic(), urls)
    if not cached[1]:
        raise GatewayNotOnRay(f"no gateway of a fleet named {name!r} in Ray namespace {namespace!r}")
    return cached[1]


def cached_urls(address: str) -> list[str] | None:
    """The gateways of `address` as last asked; None when that answer is empty or older than `CACHE_S`."""
    namespace, name = parse(address)
    with _lock:
        cached = _cache.get(f"{namespace}/{name}")
    if cached is None or not cached[1] or time.monotonic() - cached[0] >= CACHE_S:
        return None
    return cached[1]


def _ask(namespace: str, name: str, timeout_s: float) -> list[str]:
    try:
        import ray
    except ImportError as exc:
        raise GatewayNotOnRay("Ray is not installed here (pip install ray)") from exc
    if not ray.is_initialized():
        ray.init(address="auto", log_to_driver=False, logging_level=logging.WARNING)
    try:
        directory = ray.get_actor(name, namespace=namespace)
        urls: list[str] = ray.get(directory.gateways.remote(), timeout=timeout_s)
    except (ValueError, ray.exceptions.RayError) as exc:
        raise GatewayNotOnRay(
            f"no fleet named {name!r} in Ray namespace {namespace!r} on this cluster "
            f"(start one with `rewardfleet up --ray`): {exc}"
        ) from exc
    if not urls:
        raise GatewayNotOnRay(f"the fleet {name!r} (namespace {namespace!r}) has no gateway ready yet")
    return urls


def resolve(address: str) -> str:
    """One of the fleet's gateways (a random one, spreading trainers over them)."""
    return random.choice(gateway_urls(address))


def published_here() -> str | None:
    """`ray:` (the default fleet) if this process is already connected to a Ray cluster where that fleet
    publishes a gateway, else None; never imports or connects Ray itself."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    try:
        gateway_urls(PREFIX)
    except GatewayNotOnRay:
        return None
    return PREFIX
