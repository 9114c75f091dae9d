"""`rewardfleet up` and `rewardfleet status`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer


def up(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="Fleet YAML (default: the embedded CPU fleet).", exists=True, dir_okay=False
        ),
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Option("--run-dir", help="Logs and state (default .rewardfleet).")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="Gateway port (overrides the config).")] = None,
    processes: Annotated[
        str | None,
        typer.Option("--processes", help="Gateway processes: a number or 'auto' (overrides the config)."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every command line and exit.")] = False,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Place the fleet on a Ray cluster: 'auto' or the head's address (overrides ray.address).",
        ),
    ] = None,
) -> None:
    """Start model servers, one sglang-router per pool and the gateway on 127.0.0.1; Ctrl-C stops all."""
    from rich.console import Console

    from rewardfleet.services.common.redact import redact_argv
    from rewardfleet.services.fleet.config import FleetConfigError, load_fleet_config
    from rewardfleet.services.fleet.plan import plan_fleet
    from rewardfleet.services.fleet.runner import Fleet, run_fleet
    from rewardfleet.services.fleet.supervisor import Backoff

    console = Console(stderr=False)
    try:
        cfg = load_fleet_config(config)
        if run_dir is not None:
            cfg.run_dir = run_dir
        if port is not None:
            cfg.gateway.port = port
        if processes == "auto" or ((processes or "").isdigit() and int(processes or 0) >= 1):
            cfg.gateway_processes = "auto" if processes == "auto" else int(processes or 1)
        elif processes is not None:
            raise ValueError(f"--processes must be a whole number >= 1 or 'auto', not {processes!r}")
        plan = plan_fleet(cfg)
    except (FleetConfigError, ValueError) as exc:
        typer.echo(f"rewardfleet up: {exc}", err=True)
        raise typer.Exit(2) from exc
    if dry_run:
        for pool in plan.pools:
            for replica in pool.replicas:
                where = "" if replica.spec else " (external: run it on the GPU host)"
                typer.echo(f"# {pool.name}-{replica.index}{where}\n{' '.join(redact_argv(replica.argv))}")
            typer.echo(f"# {pool.name} router\n{' '.join(pool.router_spec.display_argv)}")
        typer.echo(
            f"# gateway (config {plan.gateway_config_path})\n{' '.join(plan.gateway_spec.display_argv)}"
        )
        typer.echo(plan.gateway_config_display())
        return
    address = ray_address or (cfg.ray.address if cfg.ray is not None else None)
    if address:
        from rewardfleet.services.fleet.on_ray.engine import run_ray_fleet

        raise typer.Exit(run_ray_fleet(cfg, plan, address, console))
    fleet = Fleet(plan, console, cfg.ready_timeout_s, Backoff(max_s=cfg.restart_max_backoff_s))
    raise typer.Exit(asyncio.run(run_fleet(fleet)))


def status(
    run_dir: Annotated[Path, typer.Option("--run-dir", help="The fleet's run dir.")] = Path(".rewardfleet"),
    gateway: Annotated[
        str | None,
        typer.Option(
            "--gateway",
            help="A gateway's URL (compose, Kubernetes): show its health, readiness and start-up checks "
            "(whether the code sandbox works there, else which setting is missing) instead of a fleet.",
        ),
    ] = None,
) -> None:
    """Show pools, replicas, health and addresses of the running fleet."""
    from rich.console import Console

    from rewardfleet.services.fleet.status import fleet_status, gateway_status

    code, out = fleet_status(run_dir) if gateway is None else gateway_status(gateway.rstrip("/"))
    Console().print(out)
    raise typer.Exit(code)
