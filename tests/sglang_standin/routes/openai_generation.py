"""OpenAI-compatible generation routes of a generation model: chat, completions, and `/v1/score`."""

from __future__ import annotations

import functools
import hashlib
import json
import time
import uuid
from typing import Any

from fastapi import APIRouter, Request, Response

from tests.sglang_standin.errors import StandinError
from tests.sglang_standin.inputs import message_text, score_ids, texts_of
from tests.sglang_standin.outputs import REPLY_RE, generated, token_ids, usage
from tests.sglang_standin.serving import serve, sse
from tests.sglang_standin.state import GENERATION_MODES, StandinState, StateDep

router = APIRouter()


def _finish_reason(finish: dict[str, Any]) -> tuple[str, Any]:
    return ("length", None) if finish["type"] == "length" else ("stop", finish.get("matched"))


async def _chat(state: StandinState, body: dict[str, Any]) -> Response | dict[str, Any]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise StandinError(400, "messages must be a non-empty list")
    prompt = "\n".join(message_text(m) for m in messages)
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    text, ids, finish = generated(state.config, prompt, max_tokens)
    reason, matched = _finish_reason(finish)
    created = int(time.time())
    cid = uuid.uuid4().hex
    model = body.get("model") or state.config.served_model_name()
    if body.get("stream"):
        delta = {"role": "assistant", "content": text}
        choice = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": reason,
            "matched_stop": matched,
        }
        chunk = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice],
        }
        return sse([chunk])
    message = {"role": "assistant", "content": text, "reasoning_content": None, "tool_calls": None}
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": reason,
        "matched_stop": matched,
    }
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(len(token_ids(prompt)), len(ids)),
        "metadata": {"weight_version": "default"},
    }


async def _completions(state: StandinState, body: dict[str, Any]) -> dict[str, Any]:
    choices = []
    prompt_tokens = completion_tokens = 0
    for i, prompt in enumerate(texts_of(body.get("prompt"), "prompt")):
        text, ids, finish = generated(state.config, prompt, body.get("max_tokens", 16))
        reason, matched = _finish_reason(finish)
        choices.append(
            {"index": i, "text": text, "logprobs": None, "finish_reason": reason, "matched_stop": matched}
        )
        prompt_tokens += len(token_ids(prompt))
        completion_tokens += len(ids)
    return {
        "id": uuid.uuid4().hex,
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.get("model") or state.config.served_model_name(),
        "choices": choices,
        "usage": usage(prompt_tokens, completion_tokens),
        "metadata": {"weight_version": "default"},
    }


async def _score(state: StandinState, body: dict[str, Any]) -> dict[str, Any]:
    labels = body.get("label_token_ids")
    if not isinstance(labels, list) or not labels or not all(isinstance(t, int) for t in labels):
        raise StandinError(400, "label_token_ids must be a non-empty list of token ids")
    items = body.get("items")
    items = items if isinstance(items, list) and items and not isinstance(items[0], int) else [items]
    query = score_ids(body.get("query"), "query")
    scores = []
    for item in items:
        prompt = query + score_ids(item, "items")
        digest = hashlib.sha256(json.dumps(prompt).encode()).digest()
        raw = [digest[i % len(digest)] + 1.0 for i in range(len(labels))]
        # A reply in the prompt text picks the first label (a "yes" judge), as /generate does.
        if prompt[:1] == [1] and REPLY_RE.search(
            bytes(t - 3 for t in prompt[1:] if 3 <= t < 259).decode("utf-8", errors="ignore")
        ):
            raw[0] = 1000.0
        total = sum(raw) if body.get("apply_softmax") else max(sum(raw), 1.0) * 2
        scores.append([r / total for r in raw])
    state.last_body["/v1/score:ids"] = {"prompt_ids": query}
    return {"scores": scores, "model": state.config.served_model_name(), "usage": None, "object": "scoring"}


@router.post("/v1/chat/completions")
async def chat(request: Request, state: StateDep) -> Response:
    handler = functools.partial(_chat, state)
    return await serve(state, "/v1/chat/completions", request, handler, openai=True, modes=GENERATION_MODES)


@router.post("/v1/completions")
async def completions(request: Request, state: StateDep) -> Response:
    handler = functools.partial(_completions, state)
    return await serve(state, "/v1/completions", request, handler, openai=True, modes=GENERATION_MODES)


@router.post("/v1/score")
async def v1_score(request: Request, state: StateDep) -> Response:
    handler = functools.partial(_score, state)
    return await serve(state, "/v1/score", request, handler, openai=True, modes=GENERATION_MODES)
