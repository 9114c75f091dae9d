"""Whether a pool's router sends work to a replica: "ready" means routable, not only loaded.

A model server answers `/ready` as soon as it has warmed up, but its router registers it (and marks it
healthy) only at its next health check, seconds later; in between the router answers 503 "No available
workers". So a replica is announced ready, and `rewardfleet status` says ready, only once the router's
`GET /workers` lists the replica's URL with `is_healthy: true` (sglang-router 0.3.2, docs/router.md), which is
the same for every pool kind.

`router_workers` uses the standard library (as `status.py` does: `rewardfleet status` needs no extras);
`wait_routable` polls it off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any


def router_workers(
    router_url: str, api_key: str | None = None, timeout_s: float = 2.0
) -> dict[str, bool] | None:
    """{worker url: is_healthy} from the router's `GET /workers`, or None when the router does not answer."""
    request = urllib.request.Request(f"{router_url}/workers")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            body: Any = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    workers = body.get("workers") if isinstance(body, dict) else None
    if not isinstance(workers, list):
        return None
    return {
        str(w.get("url", "")).rstrip("/"): bool(w.get("is_healthy")) for w in workers if isinstance(w, dict)
    }


def is_routable(workers: dict[str, bool] | None, worker_url: str) -> bool:
    return bool(workers and workers.get(worker_url.rstrip("/")))


async def wait_routable(
    router_url: str,
    worker_url: str,
    *,
    timeout_s: float,
    api_key: str | None = None,
    interval_s: float = 0.2,
) -> None:
    """Return once the router lists `worker_url` as healthy; raise TimeoutError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        workers = await asyncio.to_thread(router_workers, router_url, api_key)
        if is_routable(workers, worker_url):
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"{router_url} does not route to {worker_url} after {timeout_s:.0f}s (its workers: {workers})"
            )
        await asyncio.sleep(interval_s)
