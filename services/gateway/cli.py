"""`rewardfleet gateway`: run the gateway alone under uvicorn (uvloop, httptools), in one process or N."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer


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
    processes: Annotated[
        str,
        typer.Option(
            help="Gateway processes serving the port: a number, or 'auto' (one per usable CPU). Above 1 they "
            "share state through state_url, or a state server of their own when it is unset."
        ),
    ] = "1",
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    access_log: Annotated[bool, typer.Option(help="Log every request (slows the hot path).")] = False,
) -> None:
    """Run the reward gateway: POST /score with drop-in verl-style reward functions."""
    import uvicorn
    from pydantic import ValidationError

    from rewardfleet.services.common.open_files import raise_open_files_limit
    from rewardfleet.services.gateway.app import create_app
    from rewardfleet.services.gateway.config import format_validation_error
    from rewardfleet.services.gateway.hot_path.http_protocol import PROTOCOL
    from rewardfleet.services.gateway.processes.args import (
        GatewayArgs,
        build_settings,
        listen_backlog,
        parse_processes,
    )
    from rewardfleet.services.gateway.processes.launcher import serve_processes

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        n_processes = parse_processes(processes)
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
    if n_processes > 1:
        args = GatewayArgs(
            config=str(config) if config else None,
            host=host,
            port=port,
            reward_fns=[str(p) for p in reward_fns or []],
            workers=workers,
            state_url=state_url,
        )
        serve_processes(
            args,
            n_processes,
            host=settings.host,
            port=settings.port,
            keep_alive_s=settings.keep_alive_s,
            backlog=listen_backlog(settings.admission.max_inflight_requests),
            needs_state_server=settings.state.state_url is None,
            log_level=log_level,
            access_log=access_log,
        )
        return
    uvicorn.run(
        create_app(settings, freeze_startup=True),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http=PROTOCOL,
        workers=1,
        lifespan="on",
        log_level=log_level,
        access_log=access_log,
        timeout_keep_alive=settings.keep_alive_s,
        backlog=listen_backlog(settings.admission.max_inflight_requests),
    )
