"""The gateway of a fleet config, served in this process on 127.0.0.1 (`rewardfleet score` without `--url`).

It is the gateway's own app factory (`create_app`) under uvicorn, on a loopback socket the kernel picks, in
the command's event loop; the command talks to it with the same HTTP client as to a remote gateway, so both
modes share one code path (batching, retries, typed failures). The config is what `rewardfleet up` reads
(the embedded default without `--config`), but only the gateway runs: the fleet's model pools are not
started, so functions that call a pool fail on each sample with the function's own typed error. Rule rewards
need nothing else; for pools, run `rewardfleet up` and pass `--url`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn

from rewardfleet.services.fleet.config import load_fleet_config
from rewardfleet.services.gateway.app import create_app


class InProcessGatewayError(RuntimeError):
    """The in-process gateway did not start (its log lines above say why)."""


def pool_names(config_path: Path | None) -> list[str]:
    """The pools of the fleet config (not started in-process)."""
    return sorted(load_fleet_config(config_path).pools)


@contextlib.asynccontextmanager
async def inprocess_gateway(
    config_path: Path | None, startup_timeout_s: float = 300.0
) -> AsyncIterator[tuple[str, asyncio.Task[None]]]:
    """Yield the gateway's URL and the task serving it (done = the server stopped, e.g. on Ctrl-C)."""
    gateway_config = load_fleet_config(config_path).gateway
    app = create_app(gateway_config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False, loop="none", http="auto")
    )

    async def serve() -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit as exc:  # uvicorn exits on a failed start-up; the lifespan logged why
            raise InProcessGatewayError("the in-process gateway did not start; see the error above") from exc

    task = asyncio.create_task(serve())
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + startup_timeout_s
        # uvicorn exposes no start-up event; `started` flips once the lifespan ran and the socket listens.
        while not server.started:
            if task.done():
                task.result()  # raises InProcessGatewayError
                raise InProcessGatewayError("the in-process gateway stopped while starting")
            if loop.time() > deadline:
                raise InProcessGatewayError(f"the in-process gateway did not start in {startup_timeout_s}s")
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}", task
    finally:
        server.should_exit = True
        with contextlib.suppress(InProcessGatewayError, asyncio.CancelledError):
            await task
        sock.close()
