"""vLLM's pooling API, `POST /pooling`, for process reward models (SGLang 0.5.23 serves no PRM).

Request and response follow vLLM 0.33's `PoolingRequest` / `PoolingResponse`
(`vllm/entrypoints/pooling/pooling/protocol.py`; tests/vllm_conformance checks them with its classes): one
`data` entry per input, `{"index", "object": "pooling", "data": [[label probabilities] per step tag]}`, under
`"id": "pooling-<request id>"` (the `X-Request-Id` header, else the body's `request_id`, else a random id, as
vLLM's `ServingPooling` names it) and the served model's name. With `use_activation` (the default) each row is
the softmax over the labels (a sigmoid for one label), as vLLM's `TokenClassifierPoolerHead` applies it;
without, the raw logits. Every input is its own request to the batcher, so concurrent single posts share
forward passes.
"""

from __future__ import annotations

import math
import time
import uuid

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.model_server.deps import get_server
from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.prm import StepInput, StepRows
from rewardfleet.services.model_server.schemas import PoolingRequest, image_url_parts

router = APIRouter()


def _inputs(body: PoolingRequest) -> list[StepInput]:
    if body.messages is not None:
        images = image_url_parts(body.messages)
        if images:  # dropping the image and scoring the text would score steps the model never saw whole
            raise InvalidRequest(
                "this server's process reward models take text only; send the steps without image parts",
                param=images[0][0],
            )
        messages = [{"role": m.role, "content": m.text()} for m in body.messages]
        return [
            StepInput(
                messages=messages,
                add_special_tokens=bool(body.add_special_tokens),
                add_generation_prompt=body.add_generation_prompt,
                continue_final_message=body.continue_final_message,
                chat_template_kwargs=dict(body.chat_template_kwargs or {}),
            )
        ]
    special = True if body.add_special_tokens is None else body.add_special_tokens
    value = body.input
    if isinstance(value, str):
        return [StepInput(text=value, add_special_tokens=special)]
    if value and isinstance(value[0], str):
        return [StepInput(text=str(t), add_special_tokens=special) for t in value]
    if value and isinstance(value[0], list):
        return [StepInput(input_ids=list(ids), add_special_tokens=special) for ids in value]
    return [StepInput(input_ids=list(value or []), add_special_tokens=special)]  # type: ignore[arg-type]


def activate(row: list[float]) -> list[float]:
    """vLLM's classifier activation: softmax over two or more labels, sigmoid for one."""
    if len(row) == 1:
        return [1.0 / (1.0 + math.exp(-row[0]))]
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    total = sum(exps)
    return [e / total for e in exps]


@router.post("/pooling")
async def pooling(request: Request) -> JSONResponse:
    body = await parse_json_body(request, PoolingRequest)
    server = get_server(request)
    server.require_kind("prm", endpoint="/pooling")
    results: list[StepRows] = await server.run_many("steps", _inputs(body), request)
    data = [
        {
            "index": i,
            "object": "pooling",
            "data": [activate(row) for row in r.rows] if body.activation_on else r.rows,
        }
        for i, r in enumerate(results)
    ]
    prompt_tokens = sum(r.prompt_tokens for r in results)
    request_id = request.headers.get("X-Request-Id") or body.request_id or uuid.uuid4().hex[:16]
    return JSONResponse(
        {
            "id": f"pooling-{request_id}",
            "object": "list",
            "created": int(time.time()),
            "model": server.settings.model_name,
            "data": data,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens,
                "completion_tokens": 0,
                "prompt_tokens_details": None,
                "completion_tokens_details": None,
            },
        }
    )
