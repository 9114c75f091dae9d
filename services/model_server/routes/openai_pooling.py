"""OpenAI-style pooling routes: `/v1/embeddings`, `/v1/classify`, `/v1/rerank`."""

from __future__ import annotations

import math
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.model_server.deps import get_server
from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.image_inputs import ImageLimits, multimodal_inputs
from rewardfleet.services.model_server.responses import encode_embedding, new_id, usage
from rewardfleet.services.model_server.runners.common import ImageInput, TextInput
from rewardfleet.services.model_server.schemas import ClassifyRequest, EmbeddingsRequest, RerankRequest

router = APIRouter()


def openai_inputs(value: str | list[str] | list[int] | list[list[int]]) -> list[TextInput]:
    if isinstance(value, str):
        return [TextInput(text=value)]
    if value and isinstance(value[0], str):
        return [TextInput(text=t) for t in value]
    if value and isinstance(value[0], list):
        return [TextInput(input_ids=list(ids)) for ids in value]
    return [TextInput(input_ids=list(value))]  # type: ignore[arg-type]


@router.post("/v1/embeddings")
async def embeddings(request: Request) -> JSONResponse:
    """A reward model's embedding is its logits (`[score]`, what verl reads as `data[-1].embedding[-1]`);
    an encoder's is the normalised sentence vector; a CLIP model's is the text's or the image's embedding
    (SGLang's `MultimodalEmbeddingInput` items: `image_inputs.py`, `runners/clip.py`). There is no score
    route for a dual encoder, as in SGLang: the caller takes the cosine of a text and an image embedding."""
    body = await parse_json_body(request, EmbeddingsRequest)
    server = get_server(request)
    items = body.multimodal_items
    if items is None:
        inputs: list[TextInput | ImageInput] = list(openai_inputs(body.input))  # type: ignore[arg-type]
    else:
        server.require_kind("clip", endpoint="/v1/embeddings with text/image items")
        settings = server.settings
        limits = ImageLimits(settings.max_image_bytes, settings.max_image_pixels)
        inputs = multimodal_inputs(items, limits)
    results = await server.run_many(server.pooling_op, inputs, request)
    if body.dimensions is not None and body.dimensions != len(results[0].values):
        raise InvalidRequest(
            f"dimensions={body.dimensions} is not supported: "
            f"this model's embeddings have {len(results[0].values)}",
            param="dimensions",
        )
    data = [
        {"embedding": encode_embedding(r.values, body.encoding_format), "index": i, "object": "embedding"}
        for i, r in enumerate(results)
    ]
    return JSONResponse(
        {
            "data": data,
            "model": body.model,
            "object": "list",
            "usage": usage(sum(r.prompt_tokens for r in results)),
        }
    )


def _softmax(values: list[float]) -> list[float]:
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


@router.post("/v1/classify")
async def classify(request: Request) -> JSONResponse:
    """SGLang's classify shape: softmax probabilities over the labels (a 1-logit reward model shows [1.0])."""
    body = await parse_json_body(request, ClassifyRequest)
    server = get_server(request)
    runner = server.require_kind("reward", endpoint="/v1/classify")
    id2label: dict[int, str] = getattr(runner, "id2label", {})
    results = await server.run_many("score", openai_inputs(body.input), request)
    data = []
    for i, r in enumerate(results):
        probs = _softmax(r.values)
        best = max(range(len(probs)), key=probs.__getitem__)
        data.append(
            {
                "index": i,
                "label": id2label.get(best, f"LABEL_{best}"),
                "probs": probs,
                "num_classes": len(probs),
            }
        )
    return JSONResponse(
        {
            "id": new_id("classify-"),
            "object": "list",
            "created": int(time.time()),
            "model": server.settings.model_name,
            "data": data,
            "usage": usage(sum(r.prompt_tokens for r in results)),
        }
    )


@router.api_route("/v1/rerank", methods=["POST", "PUT"])
async def rerank(request: Request) -> JSONResponse:
    """Documents by relevance, best first. A reward model scores each (query, document) pair (its raw logit);
    an encoder ranks by cosine similarity of the sentence embeddings."""
    body = await parse_json_body(request, RerankRequest)
    server = get_server(request)
    op = server.pooling_op
    if op == "score":
        results = await server.run_many(
            op, [TextInput(text=body.query, pair=d) for d in body.documents], request
        )
        scores = [r.values[0] for r in results]
    else:
        results = await server.run_many(
            op, [TextInput(text=t) for t in [body.query, *body.documents]], request
        )
        query = results[0].values
        qn = math.sqrt(sum(v * v for v in query)) or 1.0
        scores = []
        for r in results[1:]:
            dn = math.sqrt(sum(v * v for v in r.values)) or 1.0
            scores.append(sum(a * b for a, b in zip(query, r.values, strict=True)) / (qn * dn))
    order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
    if body.top_n is not None:
        order = order[: body.top_n]
    out = []
    for i in order:
        item: dict[str, object] = {"score": scores[i], "index": i}
        if body.return_documents:
            item["document"] = body.documents[i]
        out.append(item)
    return JSONResponse(out)
