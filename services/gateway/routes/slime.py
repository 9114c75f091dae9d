"""slime's remote reward protocol (`--rm-url`, use `--reward-key score`), served by the gateway.

    POST /slime        POST /slime/{reward_fn}

slime posts one sample, `{"prompt", "response", "label"}` (we also read `data_source`, `reward_fn`,
`extra_info`, `metadata`, `uid` and the group fields `group_id`, `group_size`, `group_index`, `group_fn`,
which a custom `--custom-rm-path` function may send: slime's own `remote_rm` cannot, see
docs/group_judging.md), and uses whatever JSON comes back (`--reward-key` picks a field). The
answer holds the function's extra keys at the top level (but not over the reserved names below), then
`score`, `status`, `error`, `reward_failed`, `reward_fn`, `data_source`, `uid` and the whole `extra` (and
`step_scores` / `turn_scores` when the function returned them).

The function is chosen like on `/score`: the path's `{reward_fn}`, else the body's `reward_fn`, else by
`data_source` (`?data_source=`, else the body's, else "slime"). `metadata` and `extra_info` are merged (the
latter wins) into the sample's `extra_info`. Checks, failure policy (`?error_score=`) and uids:
`trainer_protocol.py`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from rewardfleet.services.gateway.routes.trainer_protocol import (
    DataSource,
    ErrorScore,
    TrainerBackend,
    build_samples,
    content_uid,
    raise_on_failure,
    score_or_fallback,
)

# Where each `/score` field came from in slime's request (errors name slime's field).
_FIELDS = {"solution_str": "response", "ground_truth": "label"}
_RESERVED = frozenset(
    {
        "score",
        "status",
        "error",
        "reward_fn",
        "data_source",
        "uid",
        "reward_failed",
        "extra",
        "timings",
        "step_scores",
        "turn_scores",
    }
)


class SlimeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    prompt: str | list[dict[str, Any]] | None = None
    response: str
    label: Any = None
    data_source: str | None = None
    reward_fn: str | None = None
    extra_info: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    uid: str | None = None
    group_id: str | int | None = None
    group_size: int | None = None
    group_index: int | None = None
    group_fn: str | None = None


def make_router(backend: TrainerBackend) -> APIRouter:
    router = APIRouter(tags=["trainer protocols"])

    async def slime(
        request: SlimeRequest, reward_fn: str | None, data_source: str | None, error_score: float | None
    ) -> JSONResponse:
        extra_info = dict(request.metadata or {})
        extra_info.update(request.extra_info or {})
        body: dict[str, Any] = {
            "data_source": data_source or request.data_source or "slime",
            "solution_str": request.response,
            "ground_truth": request.label,
            "extra_info": extra_info,
        }
        if request.prompt is not None:
            body["prompt"] = request.prompt
        if reward_fn or request.reward_fn:
            body["reward_fn"] = reward_fn or request.reward_fn
        for field in ("group_id", "group_size", "group_index", "group_fn"):
            if getattr(request, field) is not None:
                body[field] = getattr(request, field)
        body["uid"] = request.uid or content_uid(body)
        (sample,) = build_samples(backend, [body], lambda _, field: [_FIELDS.get(field, field)])
        result = await backend.score_one(sample)
        fallback = error_score if error_score is not None else backend.error_score
        raise_on_failure([result], fallback)
        payload: dict[str, Any] = {k: v for k, v in result.extra.items() if k not in _RESERVED}
        payload.update(
            score=score_or_fallback(result, fallback),
            status=result.status,
            error=result.error.model_dump() if result.error is not None else None,
            reward_failed=result.status != "ok",
            reward_fn=result.reward_fn,
            data_source=result.data_source,
            uid=result.uid if result.uid is not None else sample.uid,
            extra=result.extra,
        )
        for name in ("step_scores", "turn_scores"):  # only when the function gave them (docs/trajectories.md)
            value = getattr(result, name)
            if value is not None:
                payload[name] = value
        return JSONResponse(payload)

    @router.post("/slime")
    async def slime_default(
        request: SlimeRequest, data_source: DataSource = None, error_score: ErrorScore = None
    ) -> JSONResponse:
        return await slime(request, None, data_source, error_score)

    @router.post("/slime/{reward_fn}")
    async def slime_named(
        reward_fn: str, request: SlimeRequest, data_source: DataSource = None, error_score: ErrorScore = None
    ) -> JSONResponse:
        return await slime(request, reward_fn, data_source, error_score)

    return router
