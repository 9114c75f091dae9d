"""`rewardfleet gateway --processes N`: N gateway processes serving one port, their state shared exactly.

uvicorn binds the socket once and starts N worker processes that accept on it (the kernel spreads the
connections), restarts one that dies, and on SIGTERM sends it to every worker, each of which drains
(`reliability/drain.py`). The workers share groups, idempotency, budgets and spend through Redis: the
configured `state_url`, or else a state server of the gateway's own (`state_server.py`), started before the
workers and stopped after them. Each worker's settings come from the same arguments (`worker.py`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import uvicorn

from rewardfleet.services.common.cpus import usable_cpus
from rewardfleet.services.gateway.hot_path.http_protocol import PROTOCOL
from rewardfleet.services.gateway.processes.args import GatewayArgs
from rewardfleet.services.gateway.processes.state_server import StateServer
from rewardfleet.services.gateway.processes.worker import ARGS_ENV, FOLDER_ENV

logger = logging.getLogger(__name__)
STATE_URL_ENV = "REWARDFLEET_GATEWAY_STATE_URL"  # read by GatewaySettings: the password stays out of argv


def serve_processes(
    args: GatewayArgs,
    processes: int,
    *,
    host: str,
    port: int,
    keep_alive_s: float,
    backlog: int,
    needs_state_server: bool,
    log_level: str,
    access_log: bool,
) -> None:
    if args.workers is None:  # the sync pool's processes, shared out instead of one per CPU in every worker
        args.workers = max(1, usable_cpus() // processes)
    folder = Path(tempfile.mkdtemp(prefix="rewardfleet-gateway-"))
    folder.chmod(0o700)
    state = StateServer() if needs_state_server else None
    try:
        if state is not None:
            state.start()
            os.environ[STATE_URL_ENV] = state.url
        os.environ[ARGS_ENV] = json.dumps(asdict(args))
        os.environ[FOLDER_ENV] = str(folder)
        logger.info(
            "gateway: %d processes on %s:%d, state %s",
            processes, host, port, "own state server" if state else "state_url",
        )  # fmt: skip
        uvicorn.run(
            "rewardfleet.services.gateway.processes.worker:app",
            factory=True,
            host=host,
            port=port,
            workers=processes,
            loop="uvloop",
            http=PROTOCOL,
            lifespan="on",
            log_level=log_level,
            access_log=access_log,
            timeout_keep_alive=int(keep_alive_s),
            backlog=backlog,
        )
    finally:
        if state is not None:
            state.stop()
        shutil.rmtree(folder, ignore_errors=True)
