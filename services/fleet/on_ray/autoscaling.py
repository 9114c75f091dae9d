"""The steps that scale a fleet on Ray: replicas and gateways added, and removed drained.

Once a second: each autoscaled pool on its queue, the gateways on their requests in flight (`scaling.py`
decides; this places and removes). Mixed into `RayFleet` (engine.py).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
from rich.console import Console

from rewardfleet.services.fleet.on_ray.config import RayConfig
from rewardfleet.services.fleet.on_ray.scaling import Scaler, gateways_inflight, pool_queue

# How long a client keeps the gateways' list (`services/client/ray_discovery.py`'s CACHE_S; the fleet imports
# no client code, tests/fleet/test_ray_scaling.py checks the two agree).
DISCOVERY_CACHE_S = 10.0


class Autoscaling:
    """The scaling steps of `RayFleet`; the fields are the fleet's."""

    ray_config: RayConfig
    console: Console
    stopping: threading.Event
    replicas: dict[str, list[Any]]
    fronts: list[Any]
    front_bundles: list[int | None]
    scalers: dict[str, Scaler]
    gateway_scaler: Scaler | None
    next_index: dict[str, int]
    next_front: int
    probe_headers: dict[str, str]
    _new_replica: dict[str, Callable[..., Any]]
    _new_front: Callable[[Any, int], Any] | None
    _front_group: PlacementGroup | None

    def autoscale(self, where: dict[str, Any]) -> None:
        """One step of every autoscaled pool and of the gateways: a replica more (placed SPREAD) or one less
        (drained first)."""
        self._autoscale_pools(where)
        self._autoscale_gateways(where)

    def _autoscale_gateways(self, where: dict[str, Any]) -> None:
        scaler = self.gateway_scaler
        if scaler is None or self._new_front is None or len(where["gateways"]) != len(self.fronts):
            return  # a gateway is (re)starting: decide once all answer
        load = gateways_inflight([g["url"] for g in where["gateways"]], self.probe_headers)
        if load is None:
            return
        want = scaler.desired(len(self.fronts), load, time.monotonic())
        if want > len(self.fronts):
            # A bundle of the gateways' group a scaled-away gateway left, else anywhere there is room.
            free = sorted(set(range(self.ray_config.gateway.start_replicas)) - set(self.front_bundles))
            strategy: Any = "SPREAD"
            if free and self._front_group is not None:
                strategy = PlacementGroupSchedulingStrategy(
                    self._front_group, placement_group_bundle_index=free[0]
                )
            self.fronts.append(self._new_front(strategy, self.next_front))
            self.front_bundles.append(free[0] if free else None)
            self.next_front += 1
            self.console.print(f"gateways: {load:.0f} in flight, scaling up to {want}")
        elif want < len(self.fronts):
            gone = self.fronts.pop()
            self.front_bundles.pop()
            self.console.print(f"gateways: {load:.0f} in flight, scaling down to {want}")
            self._retire_front(gone)

    def _retire_front(self, gone: Any) -> None:
        """Unpublished first, kept until the clients' discovery caches have dropped it, then drained."""
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get(gone.retire.remote(), timeout=30)
        self.stopping.wait(DISCOVERY_CACHE_S + 1.0)
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get(gone.stop.remote(), timeout=600)
        ray.kill(gone, no_restart=True)

    def _autoscale_pools(self, where: dict[str, Any]) -> None:
        for pool, scaler in self.scalers.items():
            handles = self.replicas[pool]
            queue = pool_queue(r["url"] for r in where["pools"].get(pool, []))
            if queue is None or len(where["pools"].get(pool, [])) != len(handles):
                continue  # a replica is (re)starting: decide once all answer
            want = scaler.desired(len(handles), queue, time.monotonic())
            if want == len(handles):
                self._tell_fronts(pool)  # a gateway Ray restarted starts from the replicas it was made with
            elif want > len(handles):
                index = self.next_index[pool]
                self.next_index[pool] += 1
                handles.append(self._new_replica[pool]("SPREAD", index))
                self._tell_fronts(pool)
                self.console.print(f"{pool}: {queue:.0f} waiting, scaling up to {want} replicas")
            elif want < len(handles):
                gone = handles.pop()
                self._tell_fronts(pool)
                self.console.print(f"{pool}: {queue:.0f} waiting, scaling down to {want} replicas")
                # Its routers drop it within a reconcile round; then it finishes what it holds and exits.
                self.stopping.wait(2 * self.ray_config.reconcile_interval_s + 1.0)
                with contextlib.suppress(ray.exceptions.RayError):
                    ray.get(gone.stop.remote(20.0), timeout=60)
                ray.kill(gone, no_restart=True)

    def _tell_fronts(self, pool: str) -> None:
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get([f.set_replicas.remote(pool, self.replicas[pool]) for f in self.fronts], timeout=30)
