"""OpenAI-compatible routes of an `--is-embedding` model: `/v1/embeddings` and `/v1/classify`."""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any

from fastapi import APIRouter, Request, Response

from tests.sglang_standin.inputs import texts_of
from tests.sglang_standin.outputs import embed, token_ids, usage
from tests.sglang_standin.serving import serve
from tests.sglang_standin.state import EMBEDDING_MODES, StandinState, StateDep

router = APIRouter()


async def _embeddings(state: StandinState, body: dict[str, Any]) -> dict[str, Any]:
    texts = texts_of(body.get("input"), "input")
    data = [
        {"embedding": embed(state.config, t), "index": i, "object": "embedding"} for i, t in enumerate(texts)
    ]
    return {
        "data": data,
        "model": body.get("model") or state.config.served_model_name(),
        "object": "list",
        "usage": usage(sum(len(token_ids(t)) for t in texts), 0),
    }


async def _classify(state: StandinState, body: dict[str, Any]) -> dict[str, Any]:
    texts = texts_of(body.get("input"), "input")
    # One label: softmax over a single logit is always [1.0], exactly as SGLang reports it.
    data = [{"index": i, "label": "LABEL_0", "probs": [1.0], "num_classes": 1} for i in range(len(texts))]
    return {
        "id": f"classify-{uuid.uuid4().hex}",
        "object": "list",
        "created": int(time.time()),
        "model": state.config.served_model_name(),
        "data": data,
        "usage": usage(sum(len(token_ids(t)) for t in texts), 0),
    }


@router.post("/v1/embeddings")
async def v1_embeddings(request: Request, state: StateDep) -> Response:
    handler = functools.partial(_embeddings, state)
    return await serve(state, "/v1/embeddings", request, handler, openai=True, modes=EMBEDDING_MODES)


@router.post("/v1/classify")
async def v1_classify(request: Request, state: StateDep) -> Response:
    handler = functools.partial(_classify, state)
    return await serve(state, "/v1/classify", request, handler, openai=True, modes=("reward",))
