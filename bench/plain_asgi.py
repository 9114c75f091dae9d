"""Benchmark 13's baseline: `POST /score` as a plain ASGI app under uvicorn (no framework, no admission, no
state), doing only what the benchmark's function does: await the sample's judge latency, then answer the
gateway's JSON shape. With a `judge_url` in `extra_info` it awaits the stand-in judge through one aiohttp
session per process (as the function does through the gateway's `http_client`); without one, `asyncio.sleep`.

It runs with the gateway's uvicorn settings (uvloop, httptools, the same listen backlog and keep-alive, N
worker processes on one socket), so the burst's wall time against it is the gateway's cost over the least a
server can do for the same posts.

    .venv/bin/python -m bench.plain_asgi --port 8000 --processes 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import aiohttp
import uvicorn

from bench.judge_server import answer_json, read_body
from rewardfleet.services.common.open_files import raise_open_files_limit
from rewardfleet.services.gateway.processes.args import listen_backlog

_session: aiohttp.ClientSession | None = None


def _judge_session() -> aiohttp.ClientSession:
    global _session  # one per worker process, made in its loop on first use
    if _session is None:
        _session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=75))
    return _session


async def _judged(sample: dict[str, Any]) -> dict[str, Any]:
    extra_info = sample["extra_info"]
    started = time.monotonic()
    url = extra_info.get("judge_url")
    if url is None:
        await asyncio.sleep(extra_info["judge_latency_s"])
        return {"score": 1.0, "started_monotonic": started}
    body = {"response": sample["solution_str"], "latency_s": extra_info["judge_latency_s"]}
    async with _judge_session().post(url, json=body) as resp:
        resp.raise_for_status()
        answer = await resp.json()
    judged = answer["received_monotonic"]
    return {"score": float(answer["score"]), "started_monotonic": started, "judged_monotonic": judged}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":  # lifespan is off; nothing else is served
        return
    route = scope["method"], scope["path"]
    if route == ("GET", "/ready"):
        await answer_json(send, 200, {"ready": True})
        return
    if route != ("POST", "/score"):
        await answer_json(send, 404, {"error": "not found"})
        return
    sample = json.loads(await read_body(receive))
    extra = await _judged(sample)
    result = {
        "uid": sample.get("uid"),
        "score": extra["score"],
        "extra": extra,
        "reward_fn": sample.get("reward_fn"),
        "data_source": sample.get("data_source"),
        "status": "ok",
        "error": None,
        "fallback_score": False,
        "timings": {"total_ms": (time.monotonic() - extra["started_monotonic"]) * 1000},
        "cached": False,
        "version": None,
    }
    await answer_json(send, 200, result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--max-inflight", type=int, default=16384, help="sets the backlog as the gateway's does")
    ap.add_argument("--keep-alive-s", type=int, default=75, help="the gateway's default keep_alive_s")
    args = ap.parse_args()
    raise_open_files_limit(2 * args.max_inflight + 1024, "a step's posts and their judge calls")
    uvicorn.run(
        f"{__name__}:app",
        host="127.0.0.1",
        port=args.port,
        workers=args.processes,
        loop="uvloop",
        http="httptools",
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=args.keep_alive_s,
        backlog=listen_backlog(args.max_inflight),
    )


if __name__ == "__main__":
    main()
