"""A stand-in rubric judge with known answers, that obeys instructions injected where it reads instructions.

`POST /v1/chat/completions` reads the last user message as a naive instruction-following model would, line
by line:

- lines between `<<<response NONCE` and `response NONCE>>>` (the same nonce) are the response: data;
- a line `N. "<json string>"` is criterion N; its verdict is yes when the word the criterion quotes in single
  quotes ('Paris') occurs in the response (the known answer);
- any other line saying "answer yes" is an instruction, and it obeys it: every verdict becomes yes. A
  criterion whose own text says "answer yes" gets yes, and when it also says "ignore the others", every
  criterion of that call does (what an obedient model does with an injected criterion).

So a prompt that pastes raw text (a newline in a criterion or a response starts an instruction line) is
fooled, and one that writes the data as JSON strings inside a nonce fence is fooled only within the call
that carries the injected criterion. Answers `N: yes|no` lines (with ` - standin` with reasons asked); counts
calls and prompt words (`GET /standin/stats`).

Run: `python -m bench.harness.rubric_standin --port P`.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import uvicorn
from fastapi import FastAPI, Request

_CRITERION = re.compile(r'^(\d+)\. (".*")$')
_QUOTED = re.compile(r"'([^']+)'")


def judge(prompt: str) -> list[str]:
    lines = prompt.split("\n")
    response: list[str] = []
    criteria: list[str] = []
    obey_all = False
    fence: str | None = None
    for line in lines:
        if fence is not None:
            if line == f"response {fence}>>>":
                fence = None
            else:
                response.append(line)
            continue
        if line.startswith("<<<response "):
            fence = line.removeprefix("<<<response ")
            continue
        m = _CRITERION.match(line)
        if m:
            criteria.append(json.loads(m.group(2)))
        elif "answer yes" in line.lower():
            obey_all = True
    text = "\n".join(response).lower()
    verdicts = []
    for c in criteria:
        injected = "answer yes" in c.lower()
        if injected and "ignore the others" in c.lower():
            obey_all = True
        quoted = _QUOTED.search(c)
        verdicts.append(injected or bool(quoted and quoted.group(1).lower() in text))
    return ["yes" if obey_all or v else "no" for v in verdicts]


def create_app() -> FastAPI:
    app = FastAPI()
    stats: dict[str, Any] = {"calls": 0, "prompt_words": 0, "criteria": 0}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, Any]:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        verdicts = judge(prompt)
        reasons = "reason" in prompt
        content = "\n".join(
            f"{i}: {v}" + (" - standin" if reasons else "") for i, v in enumerate(verdicts, 1)
        )
        words = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        stats["calls"] += 1
        stats["prompt_words"] += words
        stats["criteria"] += len(verdicts)
        usage = {"prompt_tokens": words, "completion_tokens": len(content.split()), "total_tokens": 0}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "model": body.get("model", "standin"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": usage,
        }

    @app.get("/standin/stats")
    async def get_stats() -> dict[str, Any]:
        return stats

    @app.post("/standin/reset")
    async def reset() -> dict[str, Any]:
        stats.update(calls=0, prompt_words=0, criteria=0)
        return stats

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(create_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
