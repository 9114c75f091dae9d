"""SGLang's native routes: `/generate` (generation models), `/classify` and `/encode` (embedding models)."""

from __future__ import annotations

import functools
import uuid
from typing import Any

from fastapi import APIRouter, Request, Response

from tests.sglang_standin.errors import StandinError
from tests.sglang_standin.inputs import check_sampling_contract, texts_of
from tests.sglang_standin.outputs import embed, generated, token_ids
from tests.sglang_standin.serving import serve, sse
from tests.sglang_standin.state import EMBEDDING_MODES, GENERATION_MODES, StandinState, StateDep

router = APIRouter()


async def _generate(state: StandinState, body: dict[str, Any]) -> Response | dict[str, Any] | list[Any]:
    check_sampling_contract(body.get("sampling_params"))
    if "text" in body and body["text"] is not None:
        prompts = texts_of(body["text"], "text")
        single = isinstance(body["text"], str)
    elif "input_ids" in body and body["input_ids"] is not None:
        prompts = texts_of(body["input_ids"], "input_ids")
        single = bool(body["input_ids"]) and isinstance(body["input_ids"][0], int)
    else:
        raise StandinError(400, "Either text or input_ids should be provided.")
    params = body.get("sampling_params") or {}
    outs = []
    for prompt in prompts:
        text, ids, finish = generated(state.config, prompt, params.get("max_new_tokens"))
        meta = {
            "id": uuid.uuid4().hex,
            "finish_reason": finish,
            "prompt_tokens": len(token_ids(prompt)),
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": len(ids),
            "cached_tokens": 0,
            "e2e_latency": 0.001,
        }
        outs.append({"text": text, "output_ids": ids, "meta_info": meta})
    if body.get("stream"):
        return sse([outs[0]] if single else outs)
    return outs[0] if single else outs


async def _encode(state: StandinState, body: dict[str, Any]) -> dict[str, Any] | list[Any]:
    if body.get("text") is not None:
        raw = body["text"]
    elif body.get("input_ids") is not None:
        raw = body["input_ids"]
    else:
        raise StandinError(400, "Either text or input_ids should be provided.")
    outs = []
    for t in texts_of(raw, "text"):
        meta = {
            "id": uuid.uuid4().hex,
            "finish_reason": {"type": "stop", "matched": None},
            "prompt_tokens": len(token_ids(t)),
            "weight_version": "default",
            "num_retractions": 0,
            "e2e_latency": 0.001,
        }
        outs.append({"embedding": embed(state.config, t), "meta_info": meta})
    single = isinstance(raw, str) or (bool(raw) and isinstance(raw[0], int))
    return outs[0] if single else outs


@router.api_route("/generate", methods=["POST", "PUT"])
async def generate(request: Request, state: StateDep) -> Response:
    handler = functools.partial(_generate, state)
    return await serve(state, "/generate", request, handler, openai=False, modes=GENERATION_MODES)


@router.api_route("/classify", methods=["POST", "PUT"])
async def classify(request: Request, state: StateDep) -> Response:
    return await serve(
        state, "/classify", request, functools.partial(_encode, state), openai=False, modes=("reward",)
    )


@router.api_route("/encode", methods=["POST", "PUT"])
async def encode(request: Request, state: StateDep) -> Response:
    return await serve(
        state, "/encode", request, functools.partial(_encode, state), openai=False, modes=EMBEDDING_MODES
    )
