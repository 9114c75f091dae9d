"""A stand-in OpenAI-compatible judge that answers each recorded judge request with the recorded answer.

`POST /v1/chat/completions`: the request's messages (role and content, whitespace runs collapsed) are looked
up among the recordings; a match is answered with the recorded judge text, anything else is a 404 naming
the first message's start, so a request that differs from NeMo Gym's recorded one fails the row. A server
whose rows record the judge's answer but not its request is replayed with `contains` recordings: the one
whose every text (whitespace collapsed) is in the request's messages answers, and two such are a 409.
`GET /replay/log` lists every request's messages and whether it matched.

Run: `python -m tests.nemo_gym.judge_replay --port P --recordings FILE` (FILE: a JSON list of
`{"messages": [{"role", "content"}], "answer": text}` or `{"contains": [text], "answer": text}`).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


def normalise(messages: list[dict[str, Any]]) -> str:
    """The key a request is looked up by: each message's role and whitespace-collapsed content."""
    return json.dumps([[m.get("role"), re.sub(r"\s+", " ", str(m.get("content"))).strip()] for m in messages])


def _collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def create_app(recordings: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()
    answers = {normalise(r["messages"]): r["answer"] for r in recordings if "messages" in r}
    partial = [([_collapsed(t) for t in r["contains"]], r["answer"]) for r in recordings if "contains" in r]
    log: list[dict[str, Any]] = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        messages = body.get("messages") or []
        answer = answers.get(normalise(messages))
        if answer is None and partial:
            sent = _collapsed(" ".join(str(m.get("content")) for m in messages))
            found = [said for needles, said in partial if all(n in sent for n in needles)]
            if len(found) > 1:
                log.append({"messages": messages, "matched": False})
                return JSONResponse({"error": {"message": "two recordings match"}}, status_code=409)
            answer = found[0] if found else None
        log.append({"messages": messages, "matched": answer is not None})
        if answer is None:
            first = str(messages[0].get("content"))[:120] if messages else ""
            error = {"message": f"no recorded judge request matches (first message: {first!r})"}
            return JSONResponse({"error": error}, status_code=404)
        choice = {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
        return JSONResponse({
            "id": f"chatcmpl-{len(log)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"), "choices": [choice],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })  # fmt: skip

    @app.get("/replay/log")
    async def replay_log() -> JSONResponse:
        return JSONResponse(log)

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--recordings", required=True)
    args = parser.parse_args()
    with open(args.recordings) as f:
        recordings = json.load(f)
    uvicorn.run(create_app(recordings), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
