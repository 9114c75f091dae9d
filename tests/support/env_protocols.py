"""What the OpenEnv and MCP protocol tests share: the tenants' keys, the served gateway's handle, auth."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from rewardfleet.services.gateway.environments.sessions import Sessions

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
