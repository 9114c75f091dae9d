"""The Ray actors of a fleet: each owns processes on its node and exits when one of them does.

- `ReplicaActor`: one model server (CPU model server or `sglang.launch_server`) on a free port of its node.
- `FrontActor`: one gateway and, beside it on 127.0.0.1, one sglang-router per pool; a thread keeps each
  router's workers equal to the pool's replicas' current addresses (a replica restarted on another node has a
  new one), through the router's `POST /workers` and `DELETE /workers/{id}`.
- `Directory`: the named actor a trainer in the cluster asks for the gateways' addresses.

Ray restarts an actor that died (its node lost, or its process exited and took the actor with it) up to
`max_restarts` times, running `__init__` again with the same arguments wherever it is placed then.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import ray
import yaml

from rewardfleet.router.command import build_command
from rewardfleet.router.config import RouterConfig
from rewardfleet.services.fleet.on_ray.children import OwnedChild, fill, free_port, free_ports, wait_http

LOOPBACK = "127.0.0.1"
# The drain of a stopped gateway ends within shutdown_grace_s; then its worker pool stops.
STOP_MARGIN_S = 15.0


def _exit_actor(name: str, code: int) -> None:
    """A child exited on its own: end the actor, so Ray restarts it with all its processes."""
    print(f"rewardfleet: {name} exited with code {code}; the actor exits for Ray to restart it", flush=True)
    os._exit(1)


def _node() -> tuple[str, str]:
    ip: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    return ip, ray.get_runtime_context().get_node_id()


class ReplicaActor:
    """One model-server replica on this actor's node."""

    def __init__(self, name: str, argv: list[str], run_dir: str, env: dict[str, str]) -> None:
        self.host, self.node_id = _node()
        self.port = free_port(self.host)
        self.url = f"http://{self.host}:{self.port}"
        log = Path(run_dir) / "logs" / f"{name}.log"
        command = fill(argv, self.host, self.port, sys.executable)
        self.child = OwnedChild(name, command, log, _exit_actor, env).start()

    def address(self) -> str:
        return self.url

    def where(self) -> dict[str, Any]:
        pid = self.child.proc.pid if self.child.proc is not None else None
        return {"url": self.url, "node_id": self.node_id, "pid": pid}

    def wait_ready(self, timeout_s: float) -> str:
        wait_http(f"{self.url}/ready", timeout_s, lambda: self.child.alive)
        return self.url

    def stop(self, timeout_s: float) -> None:
        self.child.stop(timeout_s)


class FrontActor:
    """A gateway with a router per pool beside it; `pools` maps a pool to (router fields, replica handles)."""

    def __init__(
        self,
        index: int,
        pools: dict[str, tuple[dict[str, Any], list[Any]]],
        gateway_yaml: str,
        processes: int,
        port: int | None,
        run_dir: str,
        directory: tuple[str, str],
        ready_headers: dict[str, str],
        reconcile_interval_s: float,
    ) -> None:
        self.host, self.node_id = _node()
        self.name = f"gateway-{index}"
        self.pools = {name: handles for name, (_, handles) in pools.items()}
        self.interval_s = reconcile_interval_s
        self.ready_headers = ready_headers
        self.directory = directory
        logs = Path(run_dir) / "logs"
        self.routers: dict[str, RouterConfig] = {}
        self.children: list[OwnedChild] = []
        for pool, (fields, _) in pools.items():
            port, prometheus_port = free_ports(LOOPBACK, 2)
            cfg = RouterConfig(**fields, host=LOOPBACK, port=port, prometheus_port=prometheus_port)
            self.routers[pool] = cfg
            argv = build_command(cfg)
            self.children.append(
                OwnedChild(f"{pool}-router-{index}", argv, logs / f"{pool}-router-{index}.log", _exit_actor)
            )
        section = yaml.safe_load(gateway_yaml)["gateway"]
        section["host"] = self.host
        section["port"] = port or free_port(self.host)
        pool_section = section.setdefault("pools", {})
        pool_section["routers"] = {
            **pool_section.get("routers", {}),
            **{p: c.address for p, c in self.routers.items()},
        }
        config = Path(run_dir) / f"{self.name}.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.touch(mode=0o600)
        config.write_text(yaml.safe_dump({"gateway": section}, sort_keys=False))
        self.url = f"http://{self.host}:{section['port']}"
        self.grace_s = float(section.get("admission", {}).get("shutdown_grace_s", 30.0))
        argv = [sys.executable, "-m", "rewardfleet.services.cli", "gateway", "--config", str(config)]
        if processes > 1:
            argv += ["--processes", str(processes)]
        for child in self.children:
            child.start()
        self.gateway = OwnedChild(self.name, argv, logs / f"{self.name}.log", _exit_actor).start()
        self.children.append(self.gateway)
        self._stop = threading.Event()
        self._ready = False  # answered /ready once: published from then on, unless retired
        self._retired = False
        self._reconciler = threading.Thread(target=self._reconcile_loop, name="reconcile", daemon=True)
        self._reconciler.start()

    # --- what the driver and trainers ask ---------------------------------------------------------------
    def address(self) -> str:
        return self.url

    def where(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "node_id": self.node_id,
            "routers": {p: c.url for p, c in self.routers.items()},
            "pids": [c.proc.pid for c in self.children if c.proc is not None],
        }

    def wait_ready(self, timeout_s: float) -> str:
        """Until the gateway answers `/ready`; then publish its address in the directory."""
        wait_http(f"{self.url}/ready", timeout_s, lambda: self.gateway.alive, self.ready_headers)
        self._ready = True
        self._publish()
        return self.url

    def retire(self) -> None:
        """Out of the directory for good (the gateway is scaled away); it serves on until `stop()`."""
        self._retired = True
        name, namespace = self.directory
        with contextlib.suppress(ValueError, ray.exceptions.RayError):
            ray.get(ray.get_actor(name, namespace=namespace).withdraw.remote(self.name), timeout=10)

    def set_replicas(self, pool: str, handles: list[Any]) -> None:
        """The pool's replicas now (it was scaled); the next reconcile round routes to exactly these."""
        self.pools[pool] = list(handles)

    def workers(self, pool: str) -> dict[str, bool]:
        """{replica URL: healthy} as this gateway's router for `pool` sees them."""
        return {url: healthy for url, (_, healthy) in self._router_workers(pool).items()}

    def stop(self) -> None:
        """The gateway drains first (SIGTERM), then the routers stop."""
        self._stop.set()
        self.gateway.stop(self.grace_s + STOP_MARGIN_S)
        for child in self.children:
            child.stop(10.0)
        self._reconciler.join(timeout=10)

    # --- internals --------------------------------------------------------------------------------------
    def _publish(self) -> None:
        if self._retired:
            return
        name, namespace = self.directory
        try:
            directory = ray.get_actor(name, namespace=namespace)
            ray.get(directory.publish.remote(self.name, self.url), timeout=10)
        except (ValueError, ray.exceptions.RayError):
            pass  # the directory restarts too; the reconcile loop publishes again

    def _reconcile_loop(self) -> None:
        published_at = 0.0
        while not self._stop.wait(self.interval_s):
            for pool in self.pools:
                try:
                    self._reconcile(pool)
                except (OSError, ValueError):
                    continue  # the router is restarting with this actor, or answered oddly: next round
            if not self._ready and self.gateway.alive:
                self._ready = self._answers_ready()  # a gateway added by scaling, or restarted by Ray
                published_at = 0.0
            if self._ready and self.gateway.alive and time.monotonic() - published_at > 5.0:
                self._publish()
                published_at = time.monotonic()

    def _answers_ready(self) -> bool:
        with contextlib.suppress(OSError, RuntimeError):
            wait_http(f"{self.url}/ready", 0.0, lambda: self.gateway.alive, self.ready_headers)
            return True
        return False

    def _reconcile(self, pool: str) -> None:
        wanted: set[str] = set()
        for handle in self.pools[pool]:
            try:
                wanted.add(ray.get(handle.address.remote(), timeout=2.0))
            except ray.exceptions.RayError:
                continue  # dead or restarting: its old address goes, its new one comes next round
        current = self._router_workers(pool)
        for url in sorted(wanted - set(current)):
            self._router_call(pool, "POST", "/workers", {"url": url})
        for url in sorted(set(current) - wanted):
            self._router_call(pool, "DELETE", f"/workers/{current[url][0]}", None)

    def _router_workers(self, pool: str) -> dict[str, tuple[str, bool]]:
        body = self._router_call(pool, "GET", "/workers", None)
        workers = body.get("workers", []) if isinstance(body, dict) else []
        return {
            str(w["url"]).rstrip("/"): (str(w["id"]), bool(w.get("is_healthy")))
            for w in workers
            if isinstance(w, dict) and "url" in w and "id" in w
        }

    def _router_call(self, pool: str, method: str, path: str, body: dict[str, Any] | None) -> Any:
        cfg = self.routers[pool]
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(cfg.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if cfg.api_key is not None:
            request.add_header("Authorization", f"Bearer {cfg.api_key.get_secret_value()}")
        with urllib.request.urlopen(request, timeout=5.0) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None


class Directory:
    """The gateways' addresses, under the fleet's name: `ray.get_actor(name, namespace).gateways.remote()`."""

    def __init__(self) -> None:
        self._gateways: dict[str, str] = {}

    def publish(self, name: str, url: str) -> None:
        self._gateways[name] = url

    def withdraw(self, name: str) -> None:
        self._gateways.pop(name, None)

    def gateways(self) -> list[str]:
        return [self._gateways[name] for name in sorted(self._gateways)]
