"""Cosine similarity between the response and a reference text, embedded by the `encoder` pool.

Both texts go in one `POST /v1/embeddings {"model", "input": [response, reference]}` through the router (one
request, so both are embedded by the same replica and in the same batch). The score is the cosine of the two
vectors, in [-1, 1], or mapped to [0, 1] with `rescale=True`. An empty response scores 0 (it has no meaning
to compare; the extra `empty_response` says so) without a call; an empty reference is a data error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from rewardfleet.reward_fns._judge_templates import as_text
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()


class EncoderCallError(RemoteCallError):
    """The encoder's router or server did not answer with two usable embeddings."""


class SimilarityInputError(ValueError):
    """The sample has no reference text, or the configuration has no encoder address."""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"embeddings differ in size: {len(a)} vs {len(b)}")
    norm_a = math.sqrt(sum(x * x for x in a))
    norm_b = math.sqrt(sum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
        raise ValueError("an embedding is all zeros")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return max(-1.0, min(1.0, dot / (norm_a * norm_b)))


def _embeddings(body: Any, url: str) -> tuple[list[float], list[float]]:
    try:
        rows = sorted(body["data"], key=lambda row: int(row.get("index", 0)))
        vectors = [[float(x) for x in row["embedding"]] for row in rows]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EncoderCallError(
            f"unusable answer from {url}: {str(body)[:300]}", url=url, kind="bad_response"
        ) from exc
    if len(vectors) != 2:
        raise EncoderCallError(
            f"{url} returned {len(vectors)} embeddings for 2 inputs", url=url, kind="bad_response"
        )
    return vectors[0], vectors[1]


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    pool: str = "encoder",
    model: str = "default",
    rescale: bool = False,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """{"score": cosine (or (cosine + 1) / 2 with rescale), "cosine": float, "empty_response": bool}.

    The reference is `extra_info["reference"]` if present, else `ground_truth`.
    """
    reference = as_text((extra_info or {}).get("reference")) or as_text(ground_truth)
    if not reference or not reference.strip():
        raise SimilarityInputError("no reference text: ground_truth and extra_info['reference'] are empty")
    if not solution_str.strip():
        return {"score": 0.0, "cosine": 0.0, "empty_response": True}
    try:
        address = resolve_address(pool, router_addresses, reward_router_address)
    except ValueError as exc:
        raise SimilarityInputError(str(exc)) from exc
    body = await post_json(
        http_client,
        address,
        "/v1/embeddings",
        {"model": model, "input": [solution_str, reference]},
        timeout_s=timeout_s,
        error_cls=EncoderCallError,
    )
    url = f"{address}/v1/embeddings"
    response_vec, reference_vec = _embeddings(body, url)
    try:
        cos = cosine(response_vec, reference_vec)
    except ValueError as exc:
        raise EncoderCallError(
            f"unusable embeddings from {url}: {exc}", url=url, kind="bad_response"
        ) from exc
    return {"score": (cos + 1.0) / 2.0 if rescale else cos, "cosine": cos, "empty_response": False}
