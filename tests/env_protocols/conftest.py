"""A real gateway (create_app, uvicorn on 127.0.0.1) with two tenants, serving environments over OpenEnv and
MCP from the sessions on `app.state.sessions`."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from tests.env_protocols.memory_sessions import MemorySessions
from tests.support import free_port

KEY_A = "env-tenant-a-key-0123456789"
KEY_B = "env-tenant-b-key-0123456789"
FN = "async def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n"


@dataclass
class Served:
    url: str
    sessions: MemorySessions


def auth(key: str = KEY_A) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    fns = tmp_path_factory.mktemp("fns")
    (fns / "zero.py").write_text(FN)
    config = GatewayConfig(
        workers=1,
        reward_fns_dirs=[Path(fns)],
        tenants={"a": {"api_keys": [KEY_A]}, "b": {"api_keys": [KEY_B]}},
    )
    app = create_app(config)
    sessions = MemorySessions()
    app.state.sessions = sessions
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", sessions)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
