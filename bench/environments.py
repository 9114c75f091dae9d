"""Environment sessions: a tool call through the fleet against the same counter environment as a bare
FastAPI app keeping its sessions in a dict (the way NeMo Gym's resources server does), in the same run.

Each server runs in its own process on 127.0.0.1 (uvicorn, 1 worker). `sessions` concurrent rollouts, each
as NeMo Gym's agent drives one: `seed_session` (a cookie), then `calls` tool calls in a row with the previous
answer's cookies, then `verify`; against the gateway both ways a tool is called: NeMo Gym's `POST /<tool>`
on the server's own port, and the gateway's own `POST /sessions/call` (token in the body). Prints p50 / mean
tool-call latency per target, the server's CPU per call (steadier than latency on a busy machine), and their
ratios to the bare app (target ≤ 1.2 with the in-process store), the Redis store's ratio (a redis-server on
PATH), sessions seeded per second, and the gateway's memory per open session (RSS growth over `--open` idle
sessions). With `--rounds N` everything but the last two is measured N times (all servers stay up; each
round measures every target in turn) and the table shows each column's median over the rounds; the load
average is printed before and after.

    .venv/bin/python -m bench.environments [--sessions 16] [--calls 50] [--open 10000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from bench.common import gateway
from bench.harness.processes import ChildProcess, free_port

COOKIE = "session"


def bare_app() -> FastAPI:
    """The baseline: the counter's three routes over a dict, a uuid cookie per session."""
    app = FastAPI()
    counters: dict[str, int] = {}

    def _answer(content: Any, sid: str) -> JSONResponse:
        response = JSONResponse(content)
        response.set_cookie(COOKIE, sid)
        return response

    @app.post("/seed_session")
    async def seed(request: Request) -> JSONResponse:
        body = await request.json()
        sid = uuid.uuid4().hex
        counters[sid] = int(body.get("initial_count", 0))
        return _answer({}, sid)

    @app.post("/increment_counter")
    async def increment(request: Request) -> JSONResponse:
        sid = request.cookies[COOKIE]
        counters[sid] += int((await request.json())["count"])
        return _answer({"success": True}, sid)

    @app.post("/verify")
    async def verify(request: Request) -> JSONResponse:
        sid = request.cookies[COOKIE]
        body = await request.json()
        return _answer({**body, "reward": float(counters[sid] == body["expected_count"])}, sid)

    return app


def cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def measured(
    base: str, pid: int, sessions: int, calls: int, native: bool = False
) -> tuple[float, float, float]:
    """(p50 s, mean s, server CPU s per tool call) of one round of rollouts, after a warm-up; `native`: over
    the gateway's `/sessions/*` routes instead of NeMo Gym's."""
    drive = native_rollouts if native else rollouts
    asyncio.run(drive(base, 2, 10))
    before = cpu_s(pid)
    latencies = asyncio.run(drive(base, sessions, calls))
    cpu = (cpu_s(pid) - before) / len(latencies)  # seed and verify included: 2 of `calls` + 2 requests
    return statistics.median(latencies), statistics.fmean(latencies), cpu


@contextmanager
def bare_server(tmp: Path) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "bench.environments:bare_app", "--factory", "--port", str(port)]
    cmd += ["--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"]
    child = ChildProcess(cmd, tmp / "bare.log")
    try:
        child.wait_http(f"http://127.0.0.1:{port}/docs", timeout_s=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.stop()


def listener_pid(base: str) -> int:
    return gateway_pid(int(base.rsplit(":", 1)[1]))


def gateway_config(port: int, state_url: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "builtin_package": None,
        "nemo_gym": {"servers": {"counter": {"environment": "example_session_state_mgmt", "port": port}}},
    }
    if state_url is not None:
        config["state"] = {"state_url": state_url}
    return config


async def rollouts(base: str, sessions: int, calls: int) -> list[float]:
    """Every tool call's latency (s) of `sessions` concurrent rollouts; each checks its own reward."""
    latencies: list[float] = []

    async def one(http: aiohttp.ClientSession, start: int) -> None:
        async with http.post(f"{base}/seed_session", json={"initial_count": start}) as resp:
            cookies = resp.cookies
        for _ in range(calls):
            began = time.perf_counter()
            async with http.post(f"{base}/increment_counter", json={"count": 1}, cookies=cookies) as resp:
                await resp.read()
                cookies = resp.cookies
            latencies.append(time.perf_counter() - began)
        async with http.post(
            f"{base}/verify", json={"expected_count": start + calls}, cookies=cookies
        ) as resp:
            if (await resp.json())["reward"] != 1.0:
                raise RuntimeError(f"{base}: a rollout lost an update")

    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        await asyncio.gather(*(one(http, i) for i in range(sessions)))
    return latencies


async def native_rollouts(base: str, sessions: int, calls: int) -> list[float]:
    """As `rollouts`, over `/sessions/open|call|verify|close` (the token in the body)."""
    latencies: list[float] = []
    env = "example_session_state_mgmt"

    async def one(http: aiohttp.ClientSession, start: int) -> None:
        opened = {"env": env, "task": {"initial_count": start}}
        async with http.post(f"{base}/sessions/open", json=opened) as resp:
            token = (await resp.json())["token"]
        call = {"token": token, "tool": "increment_counter", "arguments": {"count": 1}}
        for _ in range(calls):
            began = time.perf_counter()
            async with http.post(f"{base}/sessions/call", json=call) as resp:
                await resp.read()
            latencies.append(time.perf_counter() - began)
        verify = {"token": token, "body": {"expected_count": start + calls}}
        async with http.post(f"{base}/sessions/verify", json=verify) as resp:
            if (await resp.json())["reward"] != 1.0:
                raise RuntimeError(f"{base}: a rollout lost an update")
        async with http.post(f"{base}/sessions/close", json={"token": token}) as resp:
            await resp.read()

    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        await asyncio.gather(*(one(http, i) for i in range(sessions)))
    return latencies


async def seed_rate(base: str, count: int) -> float:
    """Sessions seeded per second (64 at a time); the sessions stay open."""
    semaphore = asyncio.Semaphore(64)

    async def one(http: aiohttp.ClientSession) -> None:
        async with semaphore, http.post(f"{base}/seed_session", json={"initial_count": 1}) as resp:
            await resp.read()

    began = time.perf_counter()
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        await asyncio.gather(*(one(http) for _ in range(count)))
    return count / (time.perf_counter() - began)


def gateway_pid(port: int) -> int:
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return int(conn.pid)
    raise RuntimeError(f"no process listens on {port}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--open", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # label -> (base URL, pid, native); measured in this order every round
    targets: dict[str, tuple[str, int, bool]] = {}
    rounds: dict[str, list[tuple[float, float, float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as name, ExitStack() as stack:
        tmp = Path(name)
        bare = stack.enter_context(bare_server(tmp))
        targets["bare FastAPI + dict"] = (bare, listener_pid(bare), False)
        stores: list[tuple[str, str | None]] = [("in-process store", None)]
        if shutil.which("redis-server"):
            rport = free_port()
            redis_server = subprocess.Popen(
                ["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
            )
            stack.callback(redis_server.wait, timeout=10)
            stack.callback(redis_server.terminate)
            time.sleep(0.5)
            stores.append(("Redis store", f"redis://127.0.0.1:{rport}/0"))
        in_process = ""
        for store, state_url in stores:
            port = free_port()
            main_url = stack.enter_context(
                gateway(tmp, gateway_config(port, state_url), name=store.split()[0].replace("-", "_"))
            )
            gym = f"http://127.0.0.1:{port}"
            pid = listener_pid(gym)
            targets[f"{store}, NeMo Gym /<tool>"] = (gym, pid, False)
            targets[f"{store}, /sessions/call"] = (main_url, pid, True)
            in_process = in_process or gym
        for _ in range(args.rounds):
            row = {
                label: measured(url, pid, args.sessions, args.calls, native)
                for label, (url, pid, native) in targets.items()
            }
            base_p50, _, base_cpu = row["bare FastAPI + dict"]
            for label, (p50, mean, cpu) in row.items():
                rounds.setdefault(label, []).append((p50, mean, p50 / base_p50, cpu, cpu / base_cpu))
        process = psutil.Process(listener_pid(in_process))
        rss_before = process.memory_info().rss
        rate = asyncio.run(seed_rate(in_process, args.open))
        per_session = (process.memory_info().rss - rss_before) / args.open
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    what = f"median of {args.rounds} rounds" if args.rounds > 1 else "one round"
    print(
        f"{'target (' + what + ')':38} {'p50 ms':>7} {'mean ms':>8} {'p50/bare':>8} {'CPU ms/call':>11} ",
        end="",
    )
    print(f"{'CPU/bare':>8}")
    for label, measures in rounds.items():
        p50, mean, ratio, cpu, cpu_ratio = (
            statistics.median(column) for column in zip(*measures, strict=True)
        )
        print(
            f"{label:38} {p50 * 1000:7.3f} {mean * 1000:8.3f} {ratio:8.2f} "
            f"{cpu * 1000:11.3f} {cpu_ratio:8.2f}"
        )
    if args.rounds > 1:
        for label, measures in rounds.items():
            print(f"  {label}: p50/bare by round {' '.join(f'{m[2]:.2f}' for m in measures)}")
    print(f"sessions seeded per second (in-process store, 64 at a time): {rate:.0f}")
    print(f"gateway RSS per open session ({args.open} open, idle): {per_session:.0f} bytes")


if __name__ == "__main__":
    main()
