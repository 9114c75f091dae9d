"""The gateway as N processes on one listening socket, for benchmark 13's `--replicas`: what replicas on one
host would give a whole step posted at once. Each process is the CLI's own app (`create_app` on the same
settings); they share their state through `state_url` (Redis), as replicas behind a Kubernetes Service do.
uvicorn binds the socket once and starts N worker processes that accept on it; the kernel spreads the
connections. Not a product command: `rewardfleet gateway` serves from one process (docs/deploy.md).

    .venv/bin/python -m bench.gateway_replicas --port 8000 --processes 2 --config gw.yaml --reward-fns fns/
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from rewardfleet.services.common.open_files import raise_open_files_limit

_CONFIG = "BENCH_REPLICAS_CONFIG"
_FNS = "BENCH_REPLICAS_FNS"


def app() -> FastAPI:
    """Each worker process's app (uvicorn's factory): the settings come through the environment."""
    from rewardfleet.services.gateway.app import create_app
    from rewardfleet.services.gateway.processes.args import build_settings

    settings = build_settings(Path(os.environ[_CONFIG]), None, None, [Path(os.environ[_FNS])], None)
    if settings.state.state_url is None:
        raise SystemExit("bench.gateway_replicas: replicas need `state_url` (shared state) in the config")
    return create_app(settings, freeze_startup=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--processes", type=int, required=True)
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--reward-fns", type=Path, required=True)
    args = ap.parse_args()
    os.environ[_CONFIG], os.environ[_FNS] = str(args.config), str(args.reward_fns)
    raise_open_files_limit(65536, "a step's posts and their judge calls, in every worker")
    uvicorn.run(
        f"{__name__}:app",
        factory=True,
        host="127.0.0.1",
        port=args.port,
        workers=args.processes,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=75,  # the gateway's default keep_alive_s
    )


if __name__ == "__main__":
    main()
