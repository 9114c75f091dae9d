"""A stand-in judge whose preference is known, speaking the OpenAI chat protocol as SGLang serves it.

Each response carries `quality=<int>`. Asked to compare `<response_a>` with `<response_b>` (the pairwise
judge's template) it answers `A` or `B` for the higher quality, `tie` for equal; with `--always-a` it answers
`A` whatever it sees (a judge with pure position bias). Asked to rank labelled responses
(`<response label="X">`, the listwise template) it answers the labels best first, joined by `>`.
A response containing `FAIL` makes the call answer 500 (SGLang's error shape). `--latency-min-s` /
`--latency-max-s` delay every answer by U(min, max) seconds. The `regex` the request carried is checked:
the answer must match it in full, else 400 (as a constrained server could not have produced it).
`GET /standin/log` lists every call: start and end (monotonic), status, the `regex` sent.

Run: `python -m bench.harness.preference_judge --port P [--always-a] [--latency-min-s 1 ...]`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

_QUALITY = re.compile(r"quality=(-?\d+)")
_PAIR = re.compile(r"<response_a>(.*?)</response_a>.*?<response_b>(.*?)</response_b>", re.S)
_LABELLED = re.compile(r'<response label="([A-Z])">(.*?)</response>', re.S)


def quality(text: str) -> int:
    found = _QUALITY.search(text)
    return int(found.group(1)) if found else 0


def verdict(prompt: str, always_a: bool) -> str:
    labelled = _LABELLED.findall(prompt)
    if labelled:
        ranked = sorted(labelled, key=lambda lt: (-quality(lt[1]), lt[0]))
        return ">".join(label for label, _ in ranked)
    pair = _PAIR.search(prompt)
    if pair is None:
        return "tie"
    if always_a:
        return "A"
    a, b = quality(pair.group(1)), quality(pair.group(2))
    return "A" if a > b else "B" if b > a else "tie"


def create_app(always_a: bool, latency_min_s: float, latency_max_s: float) -> FastAPI:
    app = FastAPI()
    log: list[dict[str, Any]] = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        entry: dict[str, Any] = {"start": time.monotonic(), "regex": body.get("regex")}
        log.append(entry)
        if latency_max_s > 0:
            await asyncio.sleep(random.uniform(latency_min_s, latency_max_s))  # latency (the behaviour)
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        entry["end"] = time.monotonic()
        if "FAIL" in prompt:
            entry["status"] = 500
            return JSONResponse({"object": "error", "message": "stand-in failure", "code": 500}, 500)
        answer = verdict(prompt, always_a)
        regex = body.get("regex")
        if regex is not None and re.fullmatch(regex, answer) is None:
            entry["status"] = 400
            return JSONResponse({"object": "error", "message": f"{answer!r} !~ {regex}", "code": 400}, 400)
        entry["status"] = 200
        choice = {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 1, "total_tokens": 0}
        usage["total_tokens"] = usage["prompt_tokens"] + 1
        return JSONResponse({"id": f"chatcmpl-{len(log)}", "object": "chat.completion", "created": 0,
                             "model": body.get("model"), "choices": [choice], "usage": usage})  # fmt: skip

    @app.get("/standin/log")
    async def read_log() -> list[dict[str, Any]]:
        return log

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--always-a", action="store_true")
    parser.add_argument("--latency-min-s", type=float, default=0.0)
    parser.add_argument("--latency-max-s", type=float, default=0.0)
    args = parser.parse_args()
    app = create_app(args.always_a, args.latency_min_s, args.latency_max_s)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
