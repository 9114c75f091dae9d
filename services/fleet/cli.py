"""`rewardfleet up` and `rewardfleet status`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from rewardfleet.services.fleet.config import FleetConfig
    from rewardfleet.services.fleet.plan import FleetPlan


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
    slurm: Annotated[
        bool,
        typer.Option(
            "--slurm",
            help="Write a batch script for the fleet and submit it with sbatch; inside a Slurm job "
            "(SLURM_JOB_ID set), run the fleet on the job's nodes.",
        ),
    ] = False,
    then: Annotated[
        str | None,
        typer.Option(
            "--then", help="With --slurm: a trainer command run in the same allocation with $REWARDFLEET_URL."
        ),
    ] = None,
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
    if slurm:
        raise typer.Exit(_slurm(cfg, plan, config, console, dry_run, then, port, processes))
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


def _slurm(
    cfg: FleetConfig,
    plan: FleetPlan,
    config: Path | None,
    console: Console,
    dry_run: bool,
    then: str | None,
    port: int | None,
    processes: str | None,
) -> int:
    """`up --slurm`: in a job, run the fleet there; else write the batch script and submit it."""
    import os
    import shlex
    import sys

    from rewardfleet.services.fleet.config import DEFAULT_CONFIG_PATH
    from rewardfleet.services.fleet.on_slurm.launcher import run_in_allocation
    from rewardfleet.services.fleet.on_slurm.sbatch import SubmitError, script, submit

    if os.environ.get("SLURM_JOB_ID") and not dry_run:
        return run_in_allocation(cfg, plan, console)
    up_args = [*(("--port", str(port)) if port is not None else ()),
               *(("--processes", processes) if processes is not None else ())]  # fmt: skip
    run_dir = plan.run_dir
    text = script(cfg, (config or DEFAULT_CONFIG_PATH).resolve(), run_dir, sys.executable, up_args)
    if dry_run:
        typer.echo(text)
        return 0
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "rewardfleet.sbatch"
    path.write_text(text)
    try:
        job = submit(path, shlex.split(then) if then else [])
    except SubmitError as exc:
        typer.echo(f"rewardfleet up: {exc}", err=True)
        return 1
    ready = run_dir / f"job-{job}" / (cfg.slurm.ready_file if cfg.slurm else "gateway.url")
    console.print(f"submitted Slurm job {job} ({path}); the gateway's address will be in {ready}")
    return 0


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
