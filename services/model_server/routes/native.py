"""SGLang's native routes: `/classify` and `/encode` (pooling models), `/generate` (causal LMs)."""

from __future__ import annotations

import json
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.model_server.deps import get_server
from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.responses import generation_meta, pooled_meta, request_ids
from rewardfleet.services.model_server.routes.prompt_logprobs import prompt_only
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.constraints import pick_constraint
from rewardfleet.services.model_server.runners.generation import GenerationInput, SamplingParams
from rewardfleet.services.model_server.schemas import EmbedRequest, GenerateRequest, SamplingParamsBody

router = APIRouter()


def text_inputs(
    text: str | list[str] | None, input_ids: list[int] | list[list[int]] | None
) -> tuple[list[TextInput], bool]:
    """(inputs, was the request a list?)."""
    if text is not None:
        if isinstance(text, str):
            return [TextInput(text=text)], False
        return [TextInput(text=t) for t in text], True
    if input_ids is None:
        raise InvalidRequest("give exactly one of 'text' or 'input_ids'")
    if input_ids and isinstance(input_ids[0], list):
        return [TextInput(input_ids=list(row)) for row in input_ids], True
    return [TextInput(input_ids=list(input_ids))], False  # type: ignore[arg-type]


def to_sampling_params(p: SamplingParamsBody, limit: int) -> SamplingParams:
    if p.max_new_tokens > limit:
        raise InvalidRequest(
            f"max_new_tokens {p.max_new_tokens} exceeds this server's limit of {limit}",
            param="max_new_tokens",
        )
    stop = (p.stop,) if isinstance(p.stop, str) else tuple(p.stop or ())
    schema = json.dumps(p.json_schema) if isinstance(p.json_schema, dict) else p.json_schema
    return SamplingParams(
        max_new_tokens=p.max_new_tokens,
        temperature=p.temperature,
        top_p=p.top_p,
        top_k=p.top_k,
        min_p=p.min_p,
        stop=stop,
        stop_token_ids=tuple(p.stop_token_ids or ()),
        ignore_eos=p.ignore_eos,
        skip_special_tokens=p.skip_special_tokens,
        no_stop_trim=p.no_stop_trim,
        seed=p.sampling_seed,
        constraint=pick_constraint(p.regex, schema, p.ebnf, prefix="sampling_params."),
    )


async def _pool(request: Request) -> JSONResponse:
    body = await parse_json_body(request, EmbedRequest)
    server = get_server(request)
    started = time.perf_counter()
    op = server.pooling_op
    inputs, is_list = text_inputs(body.text, body.input_ids)
    results = await server.run_many(op, inputs, request)
    rids = request_ids(body.rid, len(results))
    out = [
        {"embedding": r.values, "meta_info": pooled_meta(rid, r.prompt_tokens, started)}
        for rid, r in zip(rids, results, strict=True)
    ]
    return JSONResponse(out if is_list else out[0])


@router.api_route("/classify", methods=["POST", "PUT"])
async def classify(request: Request) -> JSONResponse:
    """Reward models: `{"embedding": [score], "meta_info": {...}}` (or a list, for a list input)."""
    return await _pool(request)


@router.api_route("/encode", methods=["POST", "PUT"])
async def encode(request: Request) -> JSONResponse:
    """Same as `/classify`; for an encoder the embedding is the sentence vector."""
    return await _pool(request)


@router.api_route("/generate", methods=["POST", "PUT"])
async def generate(request: Request) -> JSONResponse:
    body = await parse_json_body(request, GenerateRequest)
    server = get_server(request)
    started = time.perf_counter()
    server.require_kind("generation", endpoint="/generate")
    inputs, is_list = text_inputs(body.text, body.input_ids)
    limit = server.settings.max_new_tokens_limit
    if isinstance(body.sampling_params, list):
        if len(body.sampling_params) != len(inputs):
            raise InvalidRequest(
                f"sampling_params has {len(body.sampling_params)} entries for {len(inputs)} inputs",
                param="sampling_params",
            )
        params = [to_sampling_params(p, limit) for p in body.sampling_params]
    else:
        params = [to_sampling_params(body.sampling_params, limit)] * len(inputs)
    if params[0].max_new_tokens == 0:  # the schema allows 0 only for every input at once
        out = await prompt_only(server, body, inputs, request, started)
        return JSONResponse(out if is_list else out[0])
    items = [GenerationInput(x, p) for x, p in zip(inputs, params, strict=True)]
    results = await server.run_many("generate", items, request)
    rids = request_ids(body.rid, len(results))
    out = [
        {"text": r.text, "output_ids": r.output_ids, "meta_info": generation_meta(rid, r, started)}
        for rid, r in zip(rids, results, strict=True)
    ]
    return JSONResponse(out if is_list else out[0])
