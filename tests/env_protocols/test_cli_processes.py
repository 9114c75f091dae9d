"""The protocols on the real `rewardfleet gateway --processes 2` (its own HTTP protocol class and launcher):
MCP keeps nothing in a gateway process, so each call on a fresh connection (the kernel picks the process per
connection) is served by either process, on the one session of the fleet's store; OpenEnv's WebSocket
plays an episode through the CLI's server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest

pytest.importorskip("mcp.client.streamable_http", reason="the mcp SDK (the environments extra)")

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.environments.gateways import gateway

openenv = pytest.importorskip("openenv.core.generic_client", reason="openenv 0.10 (.ci/setup, --no-deps)")
GenericEnvClient = openenv.GenericEnvClient

pytestmark = pytest.mark.timeout(300)


async def call(url: str, tool: str, arguments: dict[str, object], token: str | None = None) -> dict:
    headers = {"X-Environment-Session": token} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp/probe", http_client=http)) as mcp,
    ):
        result = await mcp.call_tool(tool, arguments)
    assert not result.is_error, result
    return dict(result.structured_content or {})


def test_each_call_is_served_by_either_process(tmp_path: Path) -> None:
    async def play(url: str) -> None:
        token = str((await call(url, "seed", {"start": 0}))["session"])
        pids: set[int] = set()
        calls = 0
        while len(pids) < 2 and calls < 40:  # bounded: the kernel spreads new connections over both
            calls += 1
            output = await call(url, "add", {"n": 1}, token)
            assert output["value"] == calls  # every process sees every earlier call's update
            pids.add(int(output["pid"]))
        assert len(pids) == 2, f"{calls} calls all served by one process"

    with gateway(tmp_path, {}, "--processes", "2") as url:
        asyncio.run(play(url))
        with GenericEnvClient(base_url=f"{url}/openenv/probe").sync() as env:
            env.reset(start=2)
            added = env.step({"type": "call_tool", "tool_name": "add", "arguments": {"n": 3}})
            assert added.observation["result"]["data"]["value"] == 5
            verdict = env.step({"type": "verify", "body": {"expected": 5}})
            assert (verdict.reward, verdict.done) == (1.0, True)
