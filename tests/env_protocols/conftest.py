"""A real gateway (create_app, uvicorn on 127.0.0.1) with two tenants, serving the built-in counter
environment and tests/env_protocols/envs over OpenEnv and MCP, sessions in the in-process store."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvicorn

from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.facade import gateway_of
from tests.support import free_port

T = TypeVar("T")
ENV = "example_session_state_mgmt"  # the built-in port of NeMo Gym's counter
FLAKY = "flaky"
KEY_A = "env-tenant-a-key-0123456789"
KEY_B = "env-tenant-b-key-0123456789"
KEY_C = "env-tenant-c-key-0123456789"  # sessions_open: 1
FN = "async def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n"


@dataclass
class Served:
    url: str
    loop: asyncio.AbstractEventLoop
    sessions: Sessions

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """`coro` on the gateway's own loop (its session store is that loop's)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def open_sessions(self, tenant: str) -> int:
        counts = self.run(self.sessions.store.open())
        return sum(n for (_, owner), n in counts.items() if owner == tenant)

    def wait_closed(self, tenant: str) -> None:
        deadline = time.monotonic() + 10
        while self.open_sessions(tenant):
            assert time.monotonic() < deadline, f"{self.open_sessions(tenant)} sessions of {tenant} left open"
            time.sleep(0.02)


def auth(key: str = KEY_A) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


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
