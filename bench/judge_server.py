"""A stand-in remote judge for the benchmarks: `POST /judge {"response", "latency_s"}` answers
`{"score": 1.0 | 0.0}` after `latency_s` seconds (the caller draws it, seeded, so every path sees the same
latencies). The verdict is 1.0 when the response ends with "yes". aiohttp, no connection limit, one process.

    .venv/bin/python -m bench.judge_server --port 8011
"""

from __future__ import annotations

import argparse
import asyncio

from aiohttp import web

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
    if session is None:  # one session per event loop, no connection limit: the best case for the caller
        session = _sessions[loop] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    body = {{"response": solution_str[-200:], "latency_s": extra_info["judge_latency_s"]}}
    async with session.post(URL, json=body) as resp:
        resp.raise_for_status()
        return float((await resp.json())["score"])
"""


async def judge(request: web.Request) -> web.Response:
    body = await request.json()
    await asyncio.sleep(float(body["latency_s"]))
    return web.json_response({"score": 1.0 if str(body["response"]).endswith("yes") else 0.0})


async def health(_: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def app() -> web.Application:
    application = web.Application()
    application.router.add_post("/judge", judge)
    application.router.add_get("/health", health)
    return application


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    web.run_app(app(), host="127.0.0.1", port=args.port, print=None, backlog=8192)


if __name__ == "__main__":
    main()
