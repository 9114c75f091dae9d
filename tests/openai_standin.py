"""A stand-in for a hosted OpenAI-compatible API, for the one thing no real server here does: rate limiting.

`POST /v1/chat/completions` needs `Authorization: Bearer <--api-key>` (else 401 with OpenAI's error shape).
The first `--rate-limit-first` requests get 429 with `Retry-After: <--retry-after-s>` and OpenAI's
`x-ratelimit-*` headers, as OpenAI answers an exhausted budget; later ones get a `chat.completion` whose
content is `--reply` and whose `usage` counts words (prompt: the messages' words, completion: the reply's).
`GET /standin/log` lists every request: arrival time (monotonic), status, the body's `model` and keys.

Run: `python -m tests.openai_standin --port P --api-key K [--rate-limit-first 2] [--retry-after-s 1]`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


def create_app(api_key: str, rate_limit_first: int, retry_after_s: float, reply: str) -> FastAPI:
    app = FastAPI()
    log: list[dict[str, Any]] = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        entry = {"t": time.monotonic(), "model": body.get("model"), "keys": sorted(body)}
        log.append(entry)
        if request.headers.get("authorization") != f"Bearer {api_key}":
            entry["status"] = 401
            error = {
                "message": "Incorrect API key provided",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
            return JSONResponse({"error": error}, status_code=401)
        if len(log) <= rate_limit_first:
            entry["status"] = 429
            error = {
                "message": "Rate limit reached for requests",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
            headers = {
                "retry-after": f"{retry_after_s:g}",
                "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": f"{retry_after_s:g}s",
            }  # fmt: skip
            return JSONResponse({"error": error}, status_code=429, headers=headers)
        entry["status"] = 200
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion_words = len(reply.split())
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        return JSONResponse({
            "id": f"chatcmpl-{len(log)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": {"prompt_tokens": prompt_words, "completion_tokens": completion_words,
                      "total_tokens": prompt_words + completion_words},
        })  # fmt: skip

    @app.get("/standin/log")
    async def standin_log() -> list[dict[str, Any]]:
        return log

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--rate-limit-first", type=int, default=0)
    parser.add_argument("--retry-after-s", type=float, default=1.0)
    parser.add_argument("--reply", default="The response matches the reference.\nVerdict: correct")
    args = parser.parse_args()
    app = create_app(args.api_key, args.rate_limit_first, args.retry_after_s, args.reply)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
