"""Small helpers that build SGLang's response pieces."""

from __future__ import annotations

import base64
import struct
import time
import uuid
from typing import Any

from rewardfleet.services.model_server.runners.generation import GenerationResult


def new_id(prefix: str = "") -> str:
    return f"{prefix}{uuid.uuid4().hex}"


def usage(prompt_tokens: int, completion_tokens: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    }


def pooled_meta(rid: str, prompt_tokens: int, started: float) -> dict[str, Any]:
    """meta_info of `/classify` and `/encode`: the keys SGLang 0.5.23 sets for every output."""
    return {
        "id": rid,
        "finish_reason": {"type": "length", "length": 0},
        "prompt_tokens": prompt_tokens,
        "weight_version": "default",
        "num_retractions": 0,
        "e2e_latency": time.perf_counter() - started,
    }


def generation_meta(rid: str, r: GenerationResult, started: float) -> dict[str, Any]:
    """meta_info of `/generate`: the common keys plus the ones SGLang adds for generation outputs."""
    return {
        "id": rid,
        "finish_reason": r.finish_reason,
        "prompt_tokens": r.prompt_tokens,
        "weight_version": "default",
        "num_retractions": 0,
        "reasoning_tokens": 0,
        "completion_tokens": r.completion_tokens,
        "cached_tokens": 0,
        "e2e_latency": time.perf_counter() - started,
    }


def openai_finish_reason(r: GenerationResult) -> str:
    return "stop" if r.finish_reason.get("type") == "stop" else "length"


def encode_embedding(values: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")
    return values


def request_ids(rid: str | list[str] | None, n: int) -> list[str]:
    if isinstance(rid, list) and len(rid) == n:
        return rid
    if isinstance(rid, str) and n == 1:
        return [rid]
    return [new_id() for _ in range(n)]
