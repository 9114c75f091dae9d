"""Cosine similarity between the response and a reference text, rescaled so unrelated text scores near 0.

Cosine similarity between the response and a reference text, embedded by the `encoder` pool, rescaled
against the encoder's baseline so that unrelated text scores near 0.

Both texts go in one `POST /v1/embeddings {"model", "input": [response, reference]}` through the router (one
request, so both are embedded by the same replica and in the same batch). The raw cosine c of the two vectors
is kept in the extra `cosine`; the score is (c - b) / (1 - b), clipped to [-1, 1], with b chosen by `rescale`:

- `"baseline"` (default): b is the encoder's mean cosine on unrelated sentences (`_similarity_baseline`),
  measured once per encoder (one extra embeddings call) and cached, or the `baseline` reward_kwarg. With
  SGLang's CLS pooling MiniLM's raw cosine is about 0.5 for unrelated text, which made the raw score a
  misleading reward; rescaled, unrelated text lands near 0 and paraphrases stay high (judge_monitoring.md).
- `"none"` (or False): b = 0, the raw cosine in [-1, 1].
- `"linear"` (or True): b = -1, i.e. (c + 1) / 2 in [0, 1] (the earlier `rescale=True`).

The extra `baseline` is the b used. An empty response scores 0 (it has no meaning to compare; the extra
`empty_response` says so) without any call (its `baseline` is None if none was measured yet); an empty
reference is a data error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from rewardfleet.reward_fns._similarity_baseline import BaselineCache
from rewardfleet.reward_fns.judging.templates import as_text
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()
FIXED_BASELINES = {"none": 0.0, "linear": -1.0}
# Measured baselines, per (encoder address, model), for the life of the process (see _similarity_baseline).
BASELINES = BaselineCache()


class EncoderCallError(RemoteCallError):
    """The encoder's router or server did not answer with two usable embeddings."""


class SimilarityInputError(ValueError):
    """The sample has no reference text, or the configuration has no encoder address."""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"embeddings differ in size: {len(a)} vs {len(b)}")
    norm_a = math.sqrt(sum(x * x for x in a))
    norm_b = math.sqrt(sum(y * y for y in b))
    if not (math.isfinite(norm_a) and math.isfinite(norm_b)):
        raise ValueError(f"an embedding is not finite (norms {norm_a} and {norm_b})")
    if norm_a == 0.0 or norm_b == 0.0:
        raise ValueError("an embedding is all zeros")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return max(-1.0, min(1.0, dot / (norm_a * norm_b)))


def embedding_vectors(
    body: Any, url: str, count: int, error_cls: type[RemoteCallError] = EncoderCallError
) -> list[list[float]]:
    """The `count` vectors of an OpenAI/SGLang embeddings answer, in input order; else `error_cls`."""
    try:
        rows = sorted(body["data"], key=lambda row: int(row.get("index", 0)))
        vectors = [[float(x) for x in row["embedding"]] for row in rows]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise error_cls(
            f"unusable answer from {url}: {str(body)[:300]}", url=url, kind="bad_response"
        ) from exc
    if len(vectors) != count:
        raise error_cls(
            f"{url} returned {len(vectors)} embeddings for {count} inputs", url=url, kind="bad_response"
        )
    return vectors


def checked_cosine(
    a: Sequence[float], b: Sequence[float], url: str, error_cls: type[RemoteCallError] = EncoderCallError
) -> float:
    """`cosine`; an unusable pair of embeddings (sizes, zeros, non-finite) is an `error_cls` naming `url`."""
    try:
        return cosine(a, b)
    except ValueError as exc:
        raise error_cls(f"unusable embeddings from {url}: {exc}", url=url, kind="bad_response") from exc


def _mode(rescale: bool | str) -> str:
    mode = {True: "linear", False: "none"}.get(rescale, rescale) if isinstance(rescale, bool) else rescale
    if mode not in ("baseline", "none", "linear"):
        raise SimilarityInputError(
            f"rescale must be 'baseline', 'none' or 'linear' (or a bool), not {rescale!r}"
        )
    return mode


def rescaled(cos: float, baseline: float) -> float:
    """(cos - baseline) / (1 - baseline), clipped to [-1, 1]."""
    if baseline >= 1.0:
        raise SimilarityInputError(f"baseline {baseline} must be below 1")
    return max(-1.0, min(1.0, (cos - baseline) / (1.0 - baseline)))


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
    rescale: bool | str = "baseline",
    baseline: float | None = None,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """{"score": rescaled cosine, "cosine": raw cosine, "baseline": b used, "empty_response": bool}.

    The reference is `extra_info["reference"]` if present, else `ground_truth`. See the module docstring.
    """
    mode = _mode(rescale)
    reference = as_text((extra_info or {}).get("reference")) or as_text(ground_truth)
    if not reference or not reference.strip():
        raise SimilarityInputError("no reference text: ground_truth and extra_info['reference'] are empty")
    try:
        address = resolve_address(pool, router_addresses, reward_router_address)
    except ValueError as exc:
        raise SimilarityInputError(str(exc)) from exc
    url = f"{address}/v1/embeddings"

    async def embed(texts: list[str]) -> list[list[float]]:
        body = await post_json(
            http_client, address, "/v1/embeddings", {"model": model, "input": texts},
            timeout_s=timeout_s, error_cls=EncoderCallError,
        )  # fmt: skip
        return embedding_vectors(body, url, len(texts))

    if mode != "baseline":
        b: float | None = FIXED_BASELINES[mode]
    elif baseline is not None:
        b = float(baseline)
    else:
        b = BASELINES.known((address, model))
    if not solution_str.strip():  # no call at all (baseline None if it was never measured)
        return {"score": 0.0, "cosine": 0.0, "baseline": b, "empty_response": True}
    if b is None:
        b = await BASELINES.get((address, model), embed, lambda u, v: checked_cosine(u, v, url))
    response_vec, reference_vec = await embed([solution_str, reference])
    cos = checked_cosine(response_vec, reference_vec, url)
    return {"score": rescaled(cos, b), "cosine": cos, "baseline": b, "empty_response": False}
