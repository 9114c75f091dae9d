"""`rewardfleet up --ray`: place a planned fleet on a Ray cluster and own it until Ctrl-C.

The driver (this process) connects to the cluster, reserves one placement group per pool (a bundle per
replica, `placement_strategy` SPREAD by default: replicas on different nodes where there is room) and one for
the gateways, starts a `ReplicaActor` per replica and a `FrontActor` per gateway, waits until every gateway
answers `/ready` and every replica of a pool that does not load in the background is routed to, publishes the
gateways' addresses through the named `Directory` actor, and writes `fleet.json` (refreshed every second with
where each part runs). The actors are the driver's, not detached: if the driver dies, Ray ends them and their
processes. Ctrl-C stops the gateways first (they drain), then the replicas, kills every actor and removes the
placement groups.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy
from rich.console import Console
from rich.table import Table

from rewardfleet.services.fleet.config import FleetConfig, PoolConfig
from rewardfleet.services.fleet.on_ray.actors import Directory, FrontActor, ReplicaActor
from rewardfleet.services.fleet.on_ray.autoscaling import Autoscaling
from rewardfleet.services.fleet.on_ray.children import with_placeholders
from rewardfleet.services.fleet.on_ray.config import RayConfig, RayPlacement
from rewardfleet.services.fleet.on_ray.scaling import Scaler
from rewardfleet.services.fleet.plan import FleetPlan, write_gateway_config
from rewardfleet.services.fleet.probe_key import probe_headers
from rewardfleet.services.fleet.runner import STATE_FILE

# Passed from the driver to the model servers (Ray workers inherit their raylet's environment, not ours).
PASSED_ENV = ("HF_HUB_OFFLINE", "HF_HOME", "TRANSFORMERS_OFFLINE")


class RayFleetError(RuntimeError):
    """The cluster cannot hold the fleet, or a part did not become ready; the message says which."""


class StartInterrupted(RuntimeError):
    """SIGINT/SIGTERM arrived while the fleet was starting."""


def pool_placement(pool: PoolConfig, placement: RayPlacement | None) -> dict[str, Any]:
    """Ray resources of one replica: as configured, else a CPU pool's torch threads in CPUs (1 where unset),
    an SGLang pool's tensor-parallel size in GPUs (1 where unset) and one CPU."""
    placement = placement or RayPlacement()
    if pool.backend == "sglang":
        tp = pool.server_args.get("tp-size") or pool.server_args.get("tp") or 1
        cpus, gpus = 1.0, float(tp)
    else:
        cpus, gpus = float(pool.server_args.get("torch-num-threads") or 1), 0.0
    cpus = placement.num_cpus if placement.num_cpus is not None else cpus
    gpus = placement.num_gpus if placement.num_gpus is not None else gpus
    return {"num_cpus": cpus, "num_gpus": gpus, "resources": dict(placement.resources)}


def _bundle(resources: dict[str, Any]) -> dict[str, float]:
    bundle = {"CPU": resources["num_cpus"], "GPU": resources["num_gpus"], **resources["resources"]}
    return {k: float(v) for k, v in bundle.items() if v}


@dataclass
class RayFleet(Autoscaling):
    config: FleetConfig
    plan: FleetPlan
    ray_config: RayConfig
    console: Console
    groups: list[PlacementGroup] = field(default_factory=list)
    replicas: dict[str, list[Any]] = field(default_factory=dict)  # pool -> actor handles
    fronts: list[Any] = field(default_factory=list)
    directory: Any = None
    started_s: float = 0.0
    stopping: threading.Event = field(default_factory=threading.Event)  # Ctrl-C: start-up gives up waiting
    scalers: dict[str, Scaler] = field(default_factory=dict)
    next_index: dict[str, int] = field(default_factory=dict)
    _new_replica: dict[str, Callable[..., Any]] = field(default_factory=dict)
    gateway_scaler: Scaler | None = None
    next_front: int = 0
    probe_headers: dict[str, str] = field(default_factory=dict)
    _new_front: Callable[[Any, int], Any] | None = None
    front_bundles: list[int | None] = field(default_factory=list)  # each front's bundle in the group, if any
    _front_group: PlacementGroup | None = None

    def start(self) -> None:
        self.started_s = time.monotonic()
        write_gateway_config(self.plan)
        rc = self.ray_config
        name = rc.name
        with contextlib.suppress(ValueError):
            ray.get_actor(name, namespace=rc.namespace)
            raise RayFleetError(f"a fleet named {name!r} already runs in Ray namespace {rc.namespace!r}")
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        self.directory = (
            ray.remote(Directory)
            .options(name=name, namespace=rc.namespace, num_cpus=0, max_restarts=-1, scheduling_strategy=here)
            .remote()
        )
        run_dir = str(self.plan.run_dir)
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        for pool in self.plan.pools:
            resources = pool_placement(pool.config, rc.pools.get(pool.name))
            group = self._group(f"pool {pool.name!r}", [_bundle(resources)] * len(pool.replicas))
            template = with_placeholders(pool.replicas[0].argv, sys.executable)
            new = functools.partial(self._replica, pool.name, resources, template, env)
            self._new_replica[pool.name] = new
            self.replicas[pool.name] = [
                new(PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=r.index), r.index)
                for r in pool.replicas
            ]
            self.next_index[pool.name] = len(pool.replicas)
            placement = rc.pools.get(pool.name)
            if placement is not None and placement.autoscale is not None:
                self.scalers[pool.name] = Scaler(placement.autoscale)
        gw = rc.gateway
        gw_cpus = gw.num_cpus if gw.num_cpus is not None else 1.0
        gw_resources = {"num_cpus": gw_cpus, "num_gpus": 0.0, "resources": dict(gw.resources)}
        group = self._group("the gateways", [_bundle(gw_resources)] * gw.start_replicas)
        processes = self.config.gateway_processes
        per_front = max(1, int(gw_cpus)) if processes == "auto" else processes
        headers_fn = probe_headers(self.config.gateway)
        self.probe_headers = dict(headers_fn()) if headers_fn is not None else {}
        front = ray.remote(FrontActor)

        def new_front(strategy: Any, index: int) -> Any:
            pools = {p.name: (dict(p.config.router), self.replicas[p.name]) for p in self.plan.pools}
            return front.options(
                **gw_resources, max_restarts=rc.max_restarts, max_task_retries=-1, max_concurrency=4,
                scheduling_strategy=strategy, runtime_env=rc.runtime_env,
            ).remote(
                index, pools, self.plan.gateway_config_text, per_front, gw.port, run_dir,
                (name, rc.namespace), self.probe_headers, rc.reconcile_interval_s,
            )  # fmt: skip

        self._new_front = new_front
        self._front_group = group
        for index in range(gw.start_replicas):
            strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=index)
            self.fronts.append(new_front(strategy, index))
            self.front_bundles.append(index)
        self.next_front = gw.start_replicas
        if gw.autoscale is not None:
            self.gateway_scaler = Scaler(gw.autoscale)
        self._wait_ready()

    def _replica(
        self,
        pool: str,
        resources: dict[str, Any],
        argv: list[str],
        env: dict[str, str],
        strategy: Any,
        index: int,
    ) -> Any:
        """A new `ReplicaActor` `<pool>-<index>` (its port is picked on its node)."""
        rc = self.ray_config
        return (
            ray.remote(ReplicaActor)
            .options(
                **resources, max_restarts=rc.max_restarts, max_task_retries=-1, max_concurrency=4,
                scheduling_strategy=strategy, runtime_env=rc.runtime_env,
            )
            .remote(f"{pool}-{index}", argv, str(self.plan.run_dir), env)
        )  # fmt: skip

    def _group(self, what: str, bundles: list[dict[str, float]]) -> PlacementGroup:
        group: PlacementGroup = placement_group(bundles, strategy=self.ray_config.placement_strategy)
        self.console.print(f"{what}: reserving {len(bundles)} x {bundles[0]}")
        self.groups.append(group)
        try:
            self._get([group.ready()], self.config.ready_timeout_s)
        except ray.exceptions.GetTimeoutError as exc:
            raise RayFleetError(
                f"{what}: the cluster has no room for {len(bundles)} x {bundles[0]} "
                f"({self.ray_config.placement_strategy}) after {self.config.ready_timeout_s:.0f} s; "
                f"it offers {ray.available_resources()}"  # type: ignore[no-untyped-call]
            ) from exc
        return group

    def _wait_ready(self) -> None:
        timeout = self.config.ready_timeout_s
        try:
            urls = self._get([f.wait_ready.remote(timeout) for f in self.fronts], timeout + 30)
            self.console.print(f"gateways ready: {', '.join(urls)}")
            deadline = time.monotonic() + timeout
            for pool in self.plan.pools:
                if pool.config.load_in_background:
                    continue
                handles = self.replicas[pool.name]
                wanted = set(self._get([h.wait_ready.remote(timeout) for h in handles], timeout + 30))
                while not all(self._routed(f, pool.name, wanted) for f in self.fronts):
                    if time.monotonic() > deadline:
                        raise RayFleetError(f"pool {pool.name!r}: not routed to {sorted(wanted)}")
                    if self.stopping.wait(0.2):
                        raise StartInterrupted
                self.console.print(f"[green]{pool.name}: {len(wanted)} replica(s) ready[/green]")
        except ray.exceptions.RayError as exc:
            raise RayFleetError(f"a part of the fleet did not start: {exc}") from exc

    def _get(self, refs: list[Any], timeout_s: float) -> list[Any]:
        """`ray.get(refs)`, giving up at Ctrl-C (`StartInterrupted`) or after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            _, pending = ray.wait(refs, num_returns=len(refs), timeout=0.5)
            if not pending:
                return list(ray.get(refs))
            if self.stopping.is_set():
                raise StartInterrupted
            if time.monotonic() > deadline:
                raise ray.exceptions.GetTimeoutError(f"not ready after {timeout_s:.0f} s")

    @staticmethod
    def _routed(front: Any, pool: str, wanted: set[str]) -> bool:
        workers = ray.get(front.workers.remote(pool), timeout=30)
        return all(workers.get(url) for url in wanted)

    def where(self) -> dict[str, Any]:
        """Where each part runs now (parts restarting are left out until they answer)."""
        out: dict[str, Any] = {"gateways": [], "pools": {}}
        for front in self.fronts:
            with contextlib.suppress(ray.exceptions.RayError):
                out["gateways"].append(ray.get(front.where.remote(), timeout=2))
        for pool, handles in self.replicas.items():
            out["pools"][pool] = []
            for handle in handles:
                with contextlib.suppress(ray.exceptions.RayError):
                    out["pools"][pool].append(ray.get(handle.where.remote(), timeout=2))
        return out

    def write_state(self, where: dict[str, Any] | None = None) -> None:
        where = where if where is not None else self.where()
        state = {
            "pid": os.getpid(),
            "engine": "ray",
            "namespace": self.ray_config.namespace,
            "name": self.ray_config.name,
            "gateway": {"url": where["gateways"][0]["url"] if where["gateways"] else None},
            # The one-host shape too: `rewardfleet status` shows the first gateway's routers and the replicas.
            "pools": {
                p.name: {
                    "kind": p.config.kind,
                    "backend": p.config.backend,
                    "model_path": p.config.model_path,
                    "router": where["gateways"][0]["routers"][p.name] if where["gateways"] else None,
                    "replicas": [r["url"] for r in where["pools"].get(p.name, [])],
                }
                for p in self.plan.pools
            },
            "external_pools": {},
            "ray": where,
        }
        path = self.plan.run_dir / STATE_FILE
        path.with_suffix(".tmp").write_text(json.dumps(state, indent=2))
        path.with_suffix(".tmp").replace(path)

    def table(self) -> Table:
        table = Table(title=f"Reward Fleet is up on Ray (actor {self.ray_config.name!r})")
        for col in ("part", "address", "node"):
            table.add_column(col, overflow="fold")
        where = self.where()
        for gateway in where["gateways"]:
            table.add_row("gateway", gateway["url"], gateway["node_id"][:12])
        for pool, replicas in where["pools"].items():
            for index, replica in enumerate(replicas):
                table.add_row(f"  {pool}-{index}", replica["url"], replica["node_id"][:12])
        return table

    @staticmethod
    def _answering(handles: list[Any], timeout_s: float = 5.0) -> list[Any]:
        if not handles:
            return []
        refs = {h.where.remote(): h for h in handles}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
        return [refs[ref] for ref in ready]

    def stop(self) -> None:
        """Gateways first (they drain), then replicas; then every actor and placement group is removed. An
        actor that does not answer (still waiting for room, or restarting) holds nothing to drain: killed."""
        for handles in (self.fronts, [h for hs in self.replicas.values() for h in hs]):
            answering = self._answering(handles)
            calls = [h.stop.remote() if h in self.fronts else h.stop.remote(20.0) for h in answering]
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(calls, timeout=300)
            for handle in handles:
                ray.kill(handle, no_restart=True)
        if self.directory is not None:
            ray.kill(self.directory, no_restart=True)
        for group in self.groups:
            remove_placement_group(group)
        self.fronts.clear()
        self.front_bundles.clear()
        self.replicas.clear()
        self.groups.clear()
        self.directory = None
        with contextlib.suppress(FileNotFoundError):
            (self.plan.run_dir / STATE_FILE).unlink()


def run_ray_fleet(config: FleetConfig, plan: FleetPlan, address: str, console: Console) -> int:
    """Connect to the cluster at `address`, start the fleet, keep `fleet.json` current until SIGINT/SIGTERM,
    stop it. Returns an exit code."""
    rc = config.ray or RayConfig()
    stop = threading.Event()
    try:
        ray.init(address=address, namespace=rc.namespace, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        console.print(f"[red]rewardfleet up: cannot join the Ray cluster at {address!r}:[/red] {exc}")
        return 2
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    fleet = RayFleet(config, plan, rc, console, stopping=stop)
    code = 0
    try:
        fleet.start()
        fleet.write_state()
        console.print(fleet.table())
        console.print(f"ready in {time.monotonic() - fleet.started_s:.1f} s; Ctrl-C stops the fleet.")
        while not stop.wait(1.0):
            where = fleet.where()
            fleet.write_state(where)
            fleet.autoscale(where)
    except StartInterrupted:
        pass
    except RayFleetError as exc:
        console.print(f"[red]the fleet did not start:[/red] {exc}")
        code = 1
    finally:
        console.print("stopping the fleet…")
        fleet.stop()
        ray.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    console.print("fleet stopped.")
    return code
