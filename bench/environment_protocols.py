"""One environment over the gateway's protocols, in the same run: a counter tool call through OpenEnv's
WebSocket (`/openenv/<env>/ws`, a `step` with a `call_tool` action) and through MCP (`/mcp/<env>`,
stateless streamable HTTP: its JSON-RPC posted by hand, the server's share, and through the `mcp` SDK's
client), each against the gateway's own JSON route (`/sessions/call`) as the baseline.

One gateway process on 127.0.0.1 (in-process session store). `sessions` concurrent rollouts per protocol,
each: open (JSON `/sessions/open`, OpenEnv `reset`, MCP `seed`), `calls` increments in a row, then verify
(checked: no update lost). Prints p50 / mean tool-call latency per protocol and its ratio to the baseline.

    .venv/bin/python -m bench.environment_protocols [--sessions 8] [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx2
import websockets
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.common import gateway

ENV = "example_session_state_mgmt"


async def json_rollouts(base: str, sessions: int, calls: int) -> list[float]:
    latencies: list[float] = []

    async def one(http: aiohttp.ClientSession, start: int) -> None:
        async with http.post(
            f"{base}/sessions/open", json={"env": ENV, "task": {"initial_count": start}}
        ) as r:
            token = (await r.json())["token"]
        for _ in range(calls):
            began = time.perf_counter()
            body = {"token": token, "tool": "increment_counter", "arguments": {"count": 1}}
            async with http.post(f"{base}/sessions/call", json=body) as r:
                await r.read()
            latencies.append(time.perf_counter() - began)
        async with http.post(
            f"{base}/sessions/verify", json={"token": token, "body": {"expected_count": start + calls}}
        ) as r:
            if (await r.json())["reward"] != 1.0:
                raise RuntimeError("JSON: a rollout lost an update")
        async with http.post(f"{base}/sessions/close", json={"token": token}) as r:
            await r.read()

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(one(http, i) for i in range(sessions)))
    return latencies


async def openenv_rollouts(base: str, sessions: int, calls: int) -> list[float]:
    latencies: list[float] = []
    url = base.replace("http://", "ws://") + f"/openenv/{ENV}/ws"
    step = json.dumps(
        {
            "type": "step",
            "data": {"type": "call_tool", "tool_name": "increment_counter", "arguments": {"count": 1}},
        }
    )

    async def one(start: int) -> None:
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"initial_count": start}}))
            await ws.recv()
            for _ in range(calls):
                began = time.perf_counter()
                await ws.send(step)
                await ws.recv()
                latencies.append(time.perf_counter() - began)
            verify = {"type": "step", "data": {"type": "verify", "body": {"expected_count": start + calls}}}
            await ws.send(json.dumps(verify))
            if json.loads(await ws.recv())["data"]["reward"] != 1.0:
                raise RuntimeError("OpenEnv: a rollout lost an update")

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return latencies


async def mcp_rollouts(base: str, sessions: int, calls: int) -> list[float]:
    latencies: list[float] = []
    url = f"{base}/mcp/{ENV}"

    async def one(start: int) -> None:
        async with Client(url) as mcp:
            token = (await mcp.call_tool("seed", {"initial_count": start})).structured_content["session"]
        http = httpx2.AsyncClient(headers={"X-Environment-Session": token}, timeout=60)
        async with Client(streamable_http_client(url, http_client=http)) as mcp:
            for _ in range(calls):
                began = time.perf_counter()
                await mcp.call_tool("increment_counter", {"count": 1})
                latencies.append(time.perf_counter() - began)
            read = await mcp.call_tool("get_counter_value", {})
            if read.structured_content != {"count": start + calls}:
                raise RuntimeError("MCP: a rollout lost an update")

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return latencies


async def mcp_raw_rollouts(base: str, sessions: int, calls: int) -> list[float]:
    """MCP's JSON-RPC posted by hand (stateless, 2025-06-18 headers): the server's cost, not the client's."""
    latencies: list[float] = []
    url = f"{base}/mcp/{ENV}"
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

    def rpc(name: str, arguments: dict[str, int], n: int) -> dict[str, object]:
        return {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }

    async def one(http: aiohttp.ClientSession, start: int) -> None:
        async with http.post(url, json=rpc("seed", {"initial_count": start}, 0), headers=headers) as r:
            token = (await r.json())["result"]["structuredContent"]["session"]
        session = {**headers, "X-Environment-Session": token}
        for n in range(calls):
            began = time.perf_counter()
            async with http.post(
                url, json=rpc("increment_counter", {"count": 1}, n + 1), headers=session
            ) as r:
                await r.read()
            latencies.append(time.perf_counter() - began)
        async with http.post(url, json=rpc("get_counter_value", {}, 0), headers=session) as r:
            if (await r.json())["result"]["structuredContent"] != {"count": start + calls}:
                raise RuntimeError("MCP (raw): a rollout lost an update")

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(one(http, i) for i in range(sessions)))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, gateway(Path(tmp), {"builtin_package": None}) as base:
        runs = {}
        for name, rollouts in [
            ("json", json_rollouts),
            ("openenv_ws", openenv_rollouts),
            ("mcp_raw", mcp_raw_rollouts),
            ("mcp_sdk", mcp_rollouts),
        ]:
            asyncio.run(rollouts(base, 2, 5))  # warm-up (MCP: the SDK's first import and start)
            runs[name] = asyncio.run(rollouts(base, args.sessions, args.calls))
    baseline = statistics.median(runs["json"])
    print(f"{args.sessions} sessions x {args.calls} calls per protocol, one gateway process")
    for name, latencies in runs.items():
        p50 = statistics.median(latencies)
        print(
            f"{name:12s} p50 {p50 * 1e3:7.2f} ms  mean {statistics.fmean(latencies) * 1e3:7.2f} ms"
            f"  p50 / json {p50 / baseline:5.2f}"
        )


if __name__ == "__main__":
    main()
