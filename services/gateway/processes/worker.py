"""What each of N gateway processes runs: uvicorn's app factory, its settings and folder from the launcher."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI

ARGS_ENV = "REWARDFLEET_GATEWAY_PROCESS_ARGS"  # the CLI's arguments, as JSON (no secrets: paths and numbers)
FOLDER_ENV = "REWARDFLEET_GATEWAY_PROCESS_DIR"  # the group's private folder (metrics sockets)


def app() -> FastAPI:
    from rewardfleet.services.gateway.app import create_app
    from rewardfleet.services.gateway.processes.args import build_settings
    from rewardfleet.services.gateway.processes.siblings import Siblings

    args: dict[str, Any] = json.loads(os.environ[ARGS_ENV])
    settings = build_settings(
        Path(args["config"]) if args["config"] else None,
        args["host"],
        args["port"],
        [Path(p) for p in args["reward_fns"]],
        args["workers"],
        args["state_url"],
    )
    gateway_app = create_app(settings, freeze_startup=True)
    Siblings(Path(os.environ[FOLDER_ENV]), lambda: gateway_app.state.gateway.metrics.exposition()[0]).attach(
        gateway_app
    )
    return gateway_app
