"""OpenAI-style generation routes: `/v1/chat/completions`, `/v1/completions`, and SGLang's `/v1/score`.

A vision-language model's chat takes `image_url` parts (inline data URLs: no URL is fetched), as SGLang's.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rewardfleet.services.common.images import ImageError, ImageLimits, decode_image
from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.model_server.deps import get_server
from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.responses import new_id, openai_finish_reason, usage
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.constraints import pick_constraint
from rewardfleet.services.model_server.runners.generation import (
    GenerationInput,
    NextTokenInput,
    SamplingParams,
)
from rewardfleet.services.model_server.runners.vision import VisionGenerationInput, VisionGenerationRunner
from rewardfleet.services.model_server.schemas import (
    ChatCompletionRequest,
    ChatMessage,
    CompletionRequest,
    ContentPart,
    ScoreRequest,
    image_url_parts,
)
from rewardfleet.services.model_server.server import ModelServer

router = APIRouter()


def _sampling(
    body: ChatCompletionRequest | CompletionRequest, max_new_tokens: int, limit: int
) -> SamplingParams:
    if max_new_tokens > limit:
        raise InvalidRequest(
            f"max_tokens {max_new_tokens} exceeds this server's limit of {limit}", param="max_tokens"
        )
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    json_schema = None
    fmt = body.response_format
    if fmt is not None and fmt.type == "json_object":
        json_schema = '{"type": "object"}'  # SGLang's mapping: any JSON object
    elif fmt is not None and fmt.json_schema is not None:
        json_schema = json.dumps(fmt.json_schema.schema_)
    return SamplingParams(
        max_new_tokens=max_new_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        top_k=body.top_k,
        min_p=body.min_p,
        stop=stop,
        stop_token_ids=tuple(body.stop_token_ids or ()),
        ignore_eos=body.ignore_eos,
        skip_special_tokens=body.skip_special_tokens,
        no_stop_trim=body.no_stop_trim,
        seed=body.seed,
        constraint=pick_constraint(body.regex, json_schema, body.ebnf, schema_param="response_format"),
    )


def _chat_images(server: ModelServer, body: ChatCompletionRequest) -> tuple[Any, ...]:
    """The decoded images of the chat's `image_url` parts, in order, each checked first (bytes, header
    pixels, format; services/common/images.py); only a vision-language model takes them."""
    urls = [(f"{where}.image_url.url", url) for where, url in image_url_parts(body.messages)]
    if not urls:
        return ()
    if not isinstance(server.require_runner(), VisionGenerationRunner):
        raise InvalidRequest("this model takes no images (not a vision-language model)", param=urls[0][0])
    settings = server.settings
    limits = ImageLimits(
        max_images=settings.max_images_per_request,
        max_image_bytes=settings.max_image_bytes,
        max_image_pixels=settings.max_image_pixels,
    )
    if len(urls) > limits.max_images:
        raise InvalidRequest(
            f"{len(urls)} images; this server's limit is {limits.max_images}", param=urls[-1][0]
        )
    try:
        return tuple(decode_image(url, where, limits) for where, url in urls)
    except ImageError as exc:
        raise InvalidRequest(str(exc), param=exc.field) from None


def _message_for_template(message: ChatMessage) -> dict[str, Any]:
    """A message as the chat template takes it: text, or (with images) parts where each image is the
    processor's `{"type": "image"}` placeholder."""
    if isinstance(message.content, str) or not message.image_urls():
        return {"role": message.role, "content": message.text()}
    parts = [
        {"type": "text", "text": part.text} if isinstance(part, ContentPart) else {"type": "image"}
        for part in message.content
    ]
    return {"role": message.role, "content": parts}


def _render_chat(server: ModelServer, body: ChatCompletionRequest) -> list[int]:
    runner = server.require_kind("generation", endpoint="/v1/chat/completions")
    tok = runner.tokenizer
    if not getattr(tok, "chat_template", None):
        raise InvalidRequest("this model's tokenizer has no chat template; use /v1/completions or /generate")
    messages = [_message_for_template(m) for m in body.messages]
    try:
        text = tok.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=not body.continue_final_message,
            continue_final_message=body.continue_final_message,
            **(body.chat_template_kwargs or {}),
        )
    except Exception as exc:  # jinja raises TemplateError (and others) for conversations it rejects
        raise InvalidRequest(f"chat template failed: {exc}", param="messages") from exc
    # The template already holds every special token (bos included); don't add them twice.
    ids: list[int] = tok(text, add_special_tokens=False)["input_ids"]
    return ids


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> JSONResponse:
    body = await parse_json_body(request, ChatCompletionRequest)
    server = get_server(request)
    prompt_ids = _render_chat(server, body)
    runner = server.require_runner()
    max_new = body.max_completion_tokens or body.max_tokens
    if max_new is None:  # OpenAI's default: whatever room the context leaves (capped by the server limit)
        max_new = max(1, min(server.settings.max_new_tokens_limit, runner.context_length - len(prompt_ids)))
    params = _sampling(body, max_new, server.settings.max_new_tokens_limit)
    images = await asyncio.to_thread(_chat_images, server, body)
    prompt = TextInput(input_ids=prompt_ids)
    item = VisionGenerationInput(prompt, images, params) if images else GenerationInput(prompt, params)
    r = await server.run_one("generate", item, request)
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": r.text, "reasoning_content": None, "tool_calls": None},
        "logprobs": None,
        "finish_reason": openai_finish_reason(r),
        "matched_stop": r.matched_stop,
    }
    return JSONResponse(
        {
            "id": new_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.model,
            "choices": [choice],
            "usage": usage(r.prompt_tokens, r.completion_tokens),
        }
    )


@router.post("/v1/completions")
async def completions(request: Request) -> JSONResponse:
    body = await parse_json_body(request, CompletionRequest)
    server = get_server(request)
    server.require_kind("generation", endpoint="/v1/completions")
    prompts: list[TextInput]
    p = body.prompt
    if isinstance(p, str):
        prompts = [TextInput(text=p)]
    elif p and isinstance(p[0], str):
        prompts = [TextInput(text=t) for t in p]
    elif p and isinstance(p[0], list):
        prompts = [TextInput(input_ids=list(ids)) for ids in p]
    else:
        prompts = [TextInput(input_ids=list(p))]  # type: ignore[arg-type]
    params = _sampling(body, body.max_tokens, server.settings.max_new_tokens_limit)
    results = await server.run_many("generate", [GenerationInput(x, params) for x in prompts], request)
    runner = server.require_runner()
    choices = []
    for i, (x, r) in enumerate(zip(prompts, results, strict=True)):
        text = r.text
        if body.echo:
            text = (x.text if x.text is not None else runner.tokenizer.decode(x.input_ids)) + text
        choices.append(
            {
                "index": i,
                "text": text,
                "logprobs": None,
                "finish_reason": openai_finish_reason(r),
                "matched_stop": r.matched_stop,
            }
        )
    return JSONResponse(
        {
            "id": new_id(),
            "object": "text_completion",
            "created": int(time.time()),
            "model": body.model,
            "choices": choices,
            "usage": usage(sum(r.prompt_tokens for r in results), sum(r.completion_tokens for r in results)),
        }
    )


@router.post("/v1/score")
async def score(request: Request) -> JSONResponse:
    """Probability of each of `label_token_ids` as the next token after query+item (item+query with
    `item_first`): a yes/no judge without generation. `apply_softmax` renormalises over the label tokens."""
    body = await parse_json_body(request, ScoreRequest)
    server = get_server(request)
    server.require_kind("generation", endpoint="/v1/score")
    items: list[Any] = [body.items] if isinstance(body.items, str) else list(body.items)
    prompts: list[TextInput] = []
    for item in items:
        first, second = (item, body.query) if body.item_first else (body.query, item)
        if isinstance(first, str) and isinstance(second, str):
            prompts.append(TextInput(text=first + second))
        else:
            prompts.append(TextInput(input_ids=list(first) + list(second)))
    labels = tuple(body.label_token_ids)
    inputs = [NextTokenInput(x, labels, body.apply_softmax) for x in prompts]
    results = await server.run_many("next_token", inputs, request)
    return JSONResponse(
        {
            "scores": [r.probs for r in results],
            "pooled_hidden_states": None,
            "model": body.model,
            "usage": usage(sum(r.prompt_tokens for r in results)),
            "object": "scoring",
        }
    )
