"""Turn a `FleetConfig` into the exact child processes to run: model-server replicas, routers, the gateway.

Planning resolves every port (picking free ones where the config left them unset), writes the gateway's own
config file into the run dir, and builds argv lists. Nothing is started here, so `rewardfleet up --dry-run`
prints exactly what would run.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rewardfleet.router.command import build_command
from rewardfleet.router.config import RouterConfig
from rewardfleet.services.common.cpus import usable_cpus
from rewardfleet.services.common.hosts import connect_host
from rewardfleet.services.common.redact import redact_argv, redact_value
from rewardfleet.services.fleet.config import FleetConfig, PoolConfig
from rewardfleet.services.fleet.default_probes import default_probe_functions, probe_max_tokens
from rewardfleet.services.fleet.determinism import deterministic_flags
from rewardfleet.services.fleet.probe_key import probe_headers
from rewardfleet.services.fleet.supervisor import ChildSpec
from rewardfleet.services.model_server.checkpoints import resolve_builtin


@dataclass(frozen=True)
class ReplicaPlan:
    pool: str
    index: int
    url: str
    argv: tuple[str, ...]  # the command that serves this replica, here or on a GPU host
    spec: ChildSpec | None  # None: an SGLang server this machine cannot run; the user starts `argv`


@dataclass(frozen=True)
class PoolPlan:
    name: str
    config: PoolConfig
    replicas: list[ReplicaPlan]
    router: RouterConfig
    router_spec: ChildSpec

    @property
    def external_commands(self) -> list[list[str]]:
        """What the user runs on the GPU host, one line per replica this machine cannot run."""
        return [list(r.argv) for r in self.replicas if r.spec is None]


@dataclass(frozen=True)
class FleetPlan:
    run_dir: Path
    pools: list[PoolPlan]
    gateway_url: str
    gateway_spec: ChildSpec
    gateway_config_path: Path
    gateway_config_text: str  # YAML the gateway child reads (routers filled in from the pools)
    notes: list[str] = field(default_factory=list)
    external_pools: dict[str, Any] = field(default_factory=dict)  # name -> ExternalPoolConfig

    def gateway_config_display(self) -> str:
        """The gateway's config as `--dry-run` prints it: every secret hidden (the file keeps them)."""
        return yaml.safe_dump(redact_value(yaml.safe_load(self.gateway_config_text)), sort_keys=False)

    def to_state(self) -> dict[str, Any]:
        """What `rewardfleet status` reads back: addresses of every part."""
        return {
            "gateway": {"url": self.gateway_url},
            "pools": {
                p.name: {
                    "kind": p.config.kind,
                    "backend": p.config.backend,
                    "model_path": p.config.model_path,
                    "router": p.router.url,
                    "router_metrics": f"http://127.0.0.1:{p.router.prometheus_port}/metrics",
                    "replicas": [r.url for r in p.replicas],
                    "load_in_background": p.config.load_in_background,
                    "deterministic": p.config.deterministic,
                }
                for p in self.pools
            },
            # The key's variable name only, never its value.
            "external_pools": {
                name: {"base_url": cfg.base_url, "model": cfg.model, "api_key_env": cfg.api_key_env}
                for name, cfg in self.external_pools.items()
            },
        }


class _Ports:
    """Hands out ports: the configured ones, else free ones, never the same one twice."""

    def __init__(self) -> None:
        self._taken: set[int] = set()

    def take(self, wanted: int | None) -> int:
        if wanted is not None:
            if wanted in self._taken:
                raise ValueError(f"port {wanted} is configured twice in the fleet")
            self._taken.add(wanted)
            return wanted
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
            if port not in self._taken:
                self._taken.add(port)
                return port


def resolve_model_path(model_path: str) -> str:
    """The on-disk path of a built-in model (its package must be installed); other paths unchanged."""
    return resolve_builtin(model_path)


def _flags(args: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in args.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        else:
            out += [flag, str(value)]
    return out


def sglang_command(pool: PoolConfig, url: str) -> list[str]:
    """The `python3 -m sglang.launch_server` line for one GPU replica of `pool`."""
    port = url.rsplit(":", 1)[1]
    cmd = ["python3", "-m", "sglang.launch_server", "--model-path", pool.checkpoint,
           "--host", "127.0.0.1", "--port", port, "--enable-metrics"]  # fmt: skip
    if pool.served_model_name:
        cmd += ["--served-model-name", pool.served_model_name]
    if pool.is_embedding:
        cmd.append("--is-embedding")
    cmd += _flags(pool.server_args)
    return cmd + deterministic_flags("sglang", pool.deterministic, pool.server_args)


def _cpu_command(pool: PoolConfig, port: int) -> list[str]:
    model = resolve_model_path(pool.checkpoint)
    cmd = [sys.executable, "-m", "rewardfleet.services.cli", "serve-model",
           "--model-path", model, "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    if pool.served_model_name:
        cmd += ["--served-model-name", pool.served_model_name]
    if pool.is_embedding:
        cmd.append("--is-embedding")
    cmd += _flags(pool.server_args)
    return cmd + deterministic_flags("cpu", pool.deterministic, pool.server_args)


def router_child_spec(
    cfg: RouterConfig, name: str, log_path: Path | None = None, background: bool = False
) -> ChildSpec:
    """What a `Supervisor` needs to run (and restart) one sglang-router.

    Readiness is `/readiness` (at least one healthy worker) when the router has static workers, otherwise
    `/liveness`: a router started empty is ready to be given workers, and so is the router of a pool whose
    workers load in the background (it routes to them once they are healthy).
    """
    waits_for_workers = (cfg.worker_urls or cfg.service_discovery) and not background
    probe = "/readiness" if waits_for_workers else "/liveness"
    return ChildSpec(
        name=name, argv=tuple(build_command(cfg)), readiness_url=cfg.url + probe, log_path=log_path
    )


def sglang_available() -> bool:
    """Whether this machine can run `sglang.launch_server`: the package *and* its compiled kernels
    (`sgl_kernel`, from sglang-kernel, a CUDA build). The wheel alone, as the conformance tests install it
    with --no-deps, cannot serve."""
    return all(importlib.util.find_spec(m) is not None for m in ("sglang", "sgl_kernel"))


def _gateway_address(pool: PoolPlan) -> str:
    """What reward functions get as the pool's address: its router's, or for a PRM pool its one replica's
    (sglang-router 0.3.2 answers 404 to vLLM's /pooling; the config allows one replica per PRM pool)."""
    if pool.config.kind == "prm":
        return pool.replicas[0].url.removeprefix("http://")
    return pool.router.address


# Time the gateway gets after its drain to stop its worker pool and exit, before SIGKILL.
GATEWAY_STOP_MARGIN_S = 15.0


def gateway_processes(config: FleetConfig) -> int:
    """`auto`: the usable CPUs less the CPU model servers' torch threads (1 a replica where unset), >= 1."""
    if config.gateway_processes != "auto":
        return config.gateway_processes
    reserved = sum(
        int(pool.server_args.get("torch-num-threads") or 1) * pool.replicas
        for pool in config.pools.values()
        if pool.backend == "cpu" and pool.external is None
    )
    return max(1, usable_cpus() - reserved)


def plan_fleet(config: FleetConfig) -> FleetPlan:
    run_dir = config.run_dir.resolve()
    logs = run_dir / "logs"
    ports = _Ports()
    gateway_port = ports.take(config.gateway.port)
    pools: list[PoolPlan] = []
    notes: list[str] = []
    can_run_sglang = sglang_available()
    external: dict[str, Any] = {}
    for name, pool in config.pools.items():
        if pool.external is not None:  # outside the fleet: the gateway forwards to it, nothing runs here
            external[name] = pool.external
            continue
        replicas: list[ReplicaPlan] = []
        for i in range(pool.replicas):
            port = ports.take(pool.base_port + i if pool.base_port is not None else None)
            url = f"http://127.0.0.1:{port}"
            runs_here = pool.backend == "cpu" or can_run_sglang
            argv = _cpu_command(pool, port) if pool.backend == "cpu" else sglang_command(pool, url)
            spec = None
            if runs_here:
                spec = ChildSpec(
                    name=f"{name}-{i}", argv=tuple(argv), readiness_url=f"{url}/ready",
                    log_path=logs / f"{name}-{i}.log", stop_timeout_s=20.0,
                )  # fmt: skip
            replicas.append(ReplicaPlan(pool=name, index=i, url=url, argv=tuple(argv), spec=spec))
        router = pool.router_config(
            port=ports.take(pool.router_port),
            prometheus_port=ports.take(pool.router_prometheus_port),
            worker_urls=[r.url for r in replicas],
        )
        router_spec = router_child_spec(
            router, f"{name}-router", logs / f"{name}-router.log", background=pool.load_in_background
        )
        plan = PoolPlan(name=name, config=pool, replicas=replicas, router=router, router_spec=router_spec)
        if pool.kind == "prm":
            notes.append(
                f"pool {name!r} (prm): the gateway posts /pooling to {replicas[0].url} directly; its router "
                "only watches the replica's health (sglang-router 0.3.2 does not proxy /pooling)"
            )
        if plan.external_commands:
            notes.append(
                f"pool {name!r}: SGLang is not installed here; start these on the GPU host "
                f"(the router waits for them):\n  "
                + "\n  ".join(" ".join(redact_argv(c)) for c in plan.external_commands)
            )
        pools.append(plan)

    gateway = config.gateway.model_copy(deep=True)
    gateway.port = gateway_port
    gateway.pools.routers = {**gateway.pools.routers, **{p.name: _gateway_address(p) for p in pools}}
    gateway.pools.external_pools = {**gateway.pools.external_pools, **external}
    if config.default_pool is not None:
        gateway.pools.default_router = config.default_pool
    if "judge_probes" not in config.gateway.model_fields_set:
        judge_pools = {p.name for p in pools if p.config.kind == "judge"}
        gateway.judge_probes.functions = default_probe_functions(judge_pools, dict(gateway.functions))
    if "pool_max_tokens" not in config.gateway.judge_probes.model_fields_set:
        gateway.judge_probes.pool_max_tokens = probe_max_tokens((p.name, p.config) for p in pools)
    if gateway.loading.reward_model_tokenizer is None:
        # The reward model's tokenizer; without a reward model, the judge's (its probability mode and
        # use_generate need it): a CPU pool's checkpoint is on this host.
        local = [p for p in pools if p.config.backend == "cpu"]
        source = next((p for p in local if p.config.kind == "reward_model"), None) or next(
            (p for p in local if p.config.kind == "judge"), None
        )
        if source is not None:
            gateway.loading.reward_model_tokenizer = resolve_model_path(source.config.checkpoint)
    else:
        gateway.loading.reward_model_tokenizer = resolve_model_path(gateway.loading.reward_model_tokenizer)
    gateway_config_path = run_dir / "gateway.yaml"
    gateway_url = f"http://{connect_host(gateway.host)}:{gateway_port}"
    processes = gateway_processes(config)
    gateway_spec = ChildSpec(
        name="gateway",
        argv=(
            sys.executable, "-m", "rewardfleet.services.cli", "gateway", "--config", str(gateway_config_path),
            *(("--processes", str(processes)) if processes > 1 else ()),
        ),
        readiness_url=f"{gateway_url}/ready", log_path=logs / "gateway.log",
        readiness_headers=probe_headers(gateway),  # with keys or tenants, /ready needs one too
        # SIGTERM drains for up to shutdown_grace_s; SIGKILL only after that and the pool's own shutdown.
        stop_timeout_s=gateway.admission.shutdown_grace_s + GATEWAY_STOP_MARGIN_S,
    )  # fmt: skip
    section = gateway.model_dump(mode="json", exclude_none=True)
    if gateway.auth.api_keys:  # model_dump masks SecretStr; the gateway's own file needs the keys themselves
        section["auth"]["api_keys"] = [key.get_secret_value() for key in gateway.auth.api_keys]
    for name, tenant in gateway.tenants.items():  # a tenant's inline keys likewise (docs/tenants.md)
        if tenant.api_keys:
            section["tenants"][name]["api_keys"] = [key.get_secret_value() for key in tenant.api_keys]
    text = yaml.safe_dump({"gateway": section}, sort_keys=False)
    return FleetPlan(
        run_dir, pools, gateway_url, gateway_spec, gateway_config_path, text, notes, external_pools=external
    )


def write_gateway_config(plan: FleetPlan) -> None:
    plan.gateway_config_path.parent.mkdir(parents=True, exist_ok=True)
    plan.gateway_config_path.write_text(plan.gateway_config_text)
    plan.gateway_config_path.chmod(0o600)  # it may hold API keys
