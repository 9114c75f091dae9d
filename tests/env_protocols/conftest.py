"""A real gateway (create_app, uvicorn on 127.0.0.1) with two tenants, serving the built-in counter
environment and tests/env_protocols/envs over OpenEnv and MCP, sessions in the in-process store."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from bench.harness.processes import free_port
from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.facade import gateway_of
from tests.support.env_protocols import FN, KEY_A, KEY_B, KEY_C, Served


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    fns = tmp_path_factory.mktemp("fns")
    (fns / "zero.py").write_text(FN)
    config = GatewayConfig(
        workers=1,
        reward_fns_dirs=[Path(fns)],
        tenants={
            "a": {"api_keys": [KEY_A]},
            "b": {"api_keys": [KEY_B]},
            "c": {"api_keys": [KEY_C], "quotas": {"sessions_open": 1}},
        },
        environments={"folders": [Path(__file__).parent / "envs"]},
    )
    app = create_app(config)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    sessions = gateway_of(app.state).sessions
    assert sessions is not None
    try:
        yield Served(f"http://127.0.0.1:{port}", loop, sessions)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        loop.close()
