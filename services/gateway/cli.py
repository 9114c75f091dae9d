"""`rewardfleet gateway`: run the gateway alone under uvicorn (uvloop, httptools, one worker process)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

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
        dirs = [*settings.reward_fns_dirs, *reward_fns]
        settings = GatewaySettings(**overrides, reward_fns_dirs=dirs)
    return settings


def gateway(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8000).")] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML gateway config.", exists=True, dir_okay=False)
    ] = None,
    reward_fns: Annotated[
        list[Path] | None,
        typer.Option("--reward-fns", help="Folder of reward-function files (repeatable).", file_okay=False),
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Processes for sync functions (default: CPUs).")] = None,
    state_url: Annotated[
        str | None,
        typer.Option(
            help="Shared state for replicas: redis://host:port/db or rediss:// (default: in-process)."
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    access_log: Annotated[bool, typer.Option(help="Log every request (slows the hot path).")] = False,
) -> None:
    """Run the reward gateway: POST /score with drop-in verl-style reward functions."""
    import uvicorn
    from pydantic import ValidationError

    from rewardfleet.services.common.open_files import raise_open_files_limit
    from rewardfleet.services.gateway.app import create_app
    from rewardfleet.services.gateway.config import format_validation_error

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = build_settings(config, host, port, reward_fns, workers, state_url)
    except (ValidationError, ValueError, OSError) as exc:
        typer.echo(f"rewardfleet gateway: invalid configuration:\n{format_validation_error(exc)}", err=True)
        raise typer.Exit(2) from exc
    # A socket per request in flight, and another per judge call it awaits (docs/reliability.md).
    inflight = settings.admission.max_inflight_requests
    raise_open_files_limit(
        inflight + min(settings.http_max_connections, inflight) + 1024,
        "max_inflight_requests requests awaiting judges (http_max_connections)",
    )
    uvicorn.run(
        create_app(settings, freeze_startup=True),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        workers=1,
        lifespan="on",
        log_level=log_level,
        access_log=access_log,
        timeout_keep_alive=settings.keep_alive_s,
    )
