"""A stand-in remote judge for the benchmarks: `POST /judge {"response", "latency_s"}` answers
`{"score": 1.0 | 0.0, "received_monotonic"}` after `latency_s` seconds (the caller draws it, seeded, so every
path sees the same latencies). The verdict is 1.0 when the response ends with "yes"; `received_monotonic` is
when the judge had read the request, on the host's monotonic clock. One process: plain ASGI under uvicorn with
uvloop and httptools, no connection limit, idle connections kept 75 s.

    .venv/bin/python -m bench.judge_server --port 8011
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import uvicorn

# The judge-calling reward function, in verl's contract; used as written by both sides of the benchmark
# (verl's reward loop calling the judge itself, and the gateway's function). {url} is filled in.
JUDGE_FN = """
import asyncio
import weakref

import aiohttp

URL = "{url}"
_sessions = weakref.WeakKeyDictionary()


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None:  # one session per event loop, no connection limit, idle connections kept 60 s (the
        # judge keeps them 75 s): the best case for the caller, its connections live from one step to the next
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60)
        session = _sessions[loop] = aiohttp.ClientSession(connector=connector)
    body = {{"response": solution_str[-200:], "latency_s": extra_info["judge_latency_s"]}}
    async with session.post(URL, json=body) as resp:
        resp.raise_for_status()
        return float((await resp.json())["score"])
"""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The judge as plain ASGI under uvicorn (uvloop, httptools): a real judge runs on hosts of its own, so
    its stand-in here should take as little of the benchmark machine's shared cores as it can."""
    route = scope["method"], scope["path"]
    if route == ("GET", "/health"):
        await answer_json(send, 200, {"ok": True})
    elif route == ("POST", "/judge"):
        try:
            body = json.loads(await read_body(receive))
            latency_s, response = float(body["latency_s"]), str(body["response"])
        except (ValueError, KeyError, TypeError) as exc:
            await answer_json(send, 400, {"error": f"bad request: {exc!r}"})
            return
        received = time.monotonic()
        await asyncio.sleep(latency_s)
        score = 1.0 if response.endswith("yes") else 0.0
        await answer_json(send, 200, {"score": score, "received_monotonic": received})
    else:
        await answer_json(send, 404, {"error": "not found"})


async def read_body(receive: Any) -> bytes:
    """A request's whole body (the plain ASGI apps of bench/ read it this way)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def answer_json(send: Any, status: int, payload: dict[str, Any]) -> None:
    """Send `payload` as a whole JSON response (the plain ASGI apps of bench/ answer this way)."""
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        backlog=16384,
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=75,
    )


if __name__ == "__main__":
    main()
