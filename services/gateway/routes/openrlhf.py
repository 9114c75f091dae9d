"""OpenRLHF's remote reward protocol (`--reward.remote_url`, was `--remote_rm_url`), served by the gateway.

    POST /openrlhf     POST /openrlhf/{reward_fn}

The function is chosen like on `/score`: the path's `{reward_fn}` if given, else by `data_source` through the
gateway's table, else the gateway's default function. Without `?data_source=`, a sample's data_source comes
from its label when the label is an object with a `data_source` key, else it is "openrlhf".

OpenRLHF sends `{"query": [prompt+response, ...], "prompts": [...], "labels": [...]}` (one or more samples,
possibly none; at most `max_batch_samples`, else 413 naming `query`) and reads `{"rewards", "scores",
"extra_logs"}`. The response is recovered from each query by `query_split.split_query`; when that fails the
whole query is scored as the response and `query_split_failed` is 1 in `extra_logs`. Labels that are
objects with a `ground_truth` key are unpacked (`ground_truth`, optional `data_source`, `extra_info`); other
labels are the ground truth as is. `metas[i]`, when an object, is merged into the sample's `extra_info`.

Checks, failure policy (`?error_score=`) and uids: `trainer_protocol.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rewardfleet.services.gateway.routes.query_split import split_query
from rewardfleet.services.gateway.routes.trainer_protocol import (
    DataSource,
    ErrorScore,
    TrainerBackend,
    build_samples,
    check_count,
    content_uid,
    raise_on_failure,
    score_or_fallback,
)
from rewardfleet.services.gateway.schemas import ScoreResult

# Where each `/score` field came from in OpenRLHF's request (errors name OpenRLHF's field).
_FIELDS = {
    "prompt": "prompts",
    "solution_str": "query",
    "ground_truth": "labels",
    "extra_info": "labels",
    "data_source": "labels",
    "reward_fn": "reward_fn",
}


class OpenRLHFRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: list[str] = Field(default_factory=list, description="prompt + response, as decoded by OpenRLHF")
    prompts: list[Any] | None = None
    labels: list[Any] | None = None
    metas: list[Any] | None = None

    @model_validator(mode="after")
    def _aligned(self) -> OpenRLHFRequest:
        for name in ("prompts", "labels", "metas"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.query):
                raise ValueError(f"{name} has {len(values)} items but query has {len(self.query)}")
        return self


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


def make_router(backend: TrainerBackend) -> APIRouter:
    router = APIRouter(tags=["trainer protocols"])

    async def openrlhf(
        request: OpenRLHFRequest, reward_fn: str | None, data_source: str | None, error_score: float | None
    ) -> Response:
        check_count(backend, len(request.query), "query")
        bodies, split_ok = [], []
        for i, query in enumerate(request.query):
            prompt = request.prompts[i] if request.prompts is not None else None
            response, ok = split_query(query, prompt)
            split_ok.append(ok)
            ground_truth, label_source, extra_info = unpack_label(
                request.labels[i] if request.labels is not None else None
            )
            meta = request.metas[i] if request.metas is not None else None
            if isinstance(meta, Mapping):
                extra_info = {**meta, **extra_info}
            body: dict[str, Any] = {
                "data_source": data_source or label_source or "openrlhf",
                "solution_str": response,
                "ground_truth": ground_truth,
                "extra_info": extra_info,
            }
            if isinstance(prompt, str | list):
                body["prompt"] = prompt
            if reward_fn:
                body["reward_fn"] = reward_fn
            body["uid"] = content_uid(body)  # a retried request gets the same uid: answered from the cache
            bodies.append(body)

        def where(i: int, field: str) -> list[str | int]:
            if field == "data_source" and data_source:  # from `?data_source=`, not from a label
                return ["data_source"]
            return [_FIELDS.get(field, field), i]

        samples = build_samples(backend, bodies, where)
        results = list(await asyncio.gather(*(backend.score_one(s) for s in samples)))
        fallback = error_score if error_score is not None else backend.error_score
        raise_on_failure(results, fallback)
        rewards = [score_or_fallback(r, fallback) for r in results]
        extra_logs: dict[str, list[float]] = {
            "reward_failed": [0.0 if r.status == "ok" else 1.0 for r in results],
            "query_split_failed": [0.0 if ok else 1.0 for ok in split_ok],
        }
        for key in common_numeric_keys(results):
            extra_logs.setdefault(key, [float(r.extra[key]) for r in results])
        payload = OpenRLHFResponse(rewards=rewards, scores=list(rewards), extra_logs=extra_logs)
        return Response(payload.model_dump_json(), media_type="application/json")

    @router.post("/openrlhf", response_model=OpenRLHFResponse)
    async def openrlhf_default(
        request: OpenRLHFRequest, data_source: DataSource = None, error_score: ErrorScore = None
    ) -> Response:
        return await openrlhf(request, None, data_source, error_score)

    @router.post("/openrlhf/{reward_fn}", response_model=OpenRLHFResponse)
    async def openrlhf_named(
        reward_fn: str,
        request: OpenRLHFRequest,
        data_source: DataSource = None,
        error_score: ErrorScore = None,
    ) -> Response:
        return await openrlhf(request, reward_fn, data_source, error_score)

    return router


def unpack_label(label: Any) -> tuple[Any, Any, dict[str, Any]]:
    """(ground truth, data_source or None, extra_info) of one OpenRLHF label (see the module docstring); a
    data_source that is not a string fails the sample's validation, naming `labels`."""
    if isinstance(label, Mapping) and "ground_truth" in label:
        source = label.get("data_source")
        extra = label.get("extra_info")
        return (
            label["ground_truth"],
            source if source not in (None, "") else None,
            dict(extra) if isinstance(extra, Mapping) else {},
        )
    return label, None, {}


def common_numeric_keys(results: Sequence[ScoreResult]) -> list[str]:
    """Extra keys that every result has as a number (bools count): OpenRLHF logs their means."""
    keys: list[str] | None = None
    for result in results:
        numeric = [k for k, v in result.extra.items() if isinstance(v, bool | int | float)]
        keys = numeric if keys is None else [k for k in keys if k in numeric]
    return keys or []
