"""What the OpenRLHF and slime routes share: scoring seam, checks and failure policy.

`TrainerBackend` is the seam: `score_one` takes a `/score` request and returns its typed result, `check`
raises for a sample the gateway cannot score as given, `max_samples` bounds one request. `gateway_backend`
is the gateway's own (as `/score`); what `score_one` raises reaches the gateway's exception handlers.

Query parameters on every route: `data_source` (default for the request's samples) and `error_score` (a finite
number, else 422 naming it).

Checks. Every sample of a request is validated and checked before any is scored; an error names the
trainer's field: 422 `ValidationError` with `loc` like `["body", "labels", 0]` for a wrong type or a missing
label (a function that declares `ground_truth` without a default), 413 `FieldTooLarge` / 422 `TooDeep` with
`field` = the trainer's field for a value over its bound, 413 `BatchTooLarge` over `max_batch_samples`.

Failed samples (function error or timeout). Neither trainer has a "no reward" value: OpenRLHF turns `rewards`
into a tensor and slime uses whatever `score` holds. So a failure is never a number unless someone chose it:
1. a score the gateway set from the function's `on_error_score` is used, flagged (`reward_failed`);
2. else `?error_score=X` on the URL (or the backend's `error_score` default) is used, flagged the same way;
3. else the whole request is answered HTTP 500 `RewardFunctionFailed` (function error) or 504
   `RewardFunctionTimeout` (function timeout) with the error envelope and the failing samples (why:
   docs/architecture.md, "Notes moved from module docstrings").

Sample uids: slime's `uid` when given; otherwise (and always for OpenRLHF, which sends none) a digest of the
sample's content, so a trainer's retry of the same samples is answered from the idempotency cache.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.errors import (
    BatchTooLarge,
    GatewayError,
    RewardFunctionFailed,
    RewardFunctionTimeout,
)
from rewardfleet.services.gateway.facade import Gateway
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult, canonical_json

ScoreOne = Callable[[ScoreRequest], Awaitable[ScoreResult]]
# Checks a sample before anything is scored: raises InvalidSample, or a GatewayError (404, 413, 422).
CheckSample = Callable[[ScoreRequest], None]
# Where a `/score` field came from in the trainer's request: (sample index, `/score` field) -> `loc` parts.
Where = Callable[[int, str], list[str | int]]

# Module level: FastAPI resolves the routes' string annotations in their modules' namespaces.
ErrorScore = Annotated[
    float | None,
    Query(
        allow_inf_nan=False,
        description="score for failed samples (flagged), a finite number; default: answer 500/504",
    ),
]
DataSource = Annotated[str | None, Query(description="data_source for samples that do not carry one")]


class InvalidSample(ValueError):
    """A sample the gateway cannot score as given; `errors` are pydantic-style, `loc` in `/score` names."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(str(e.get("msg")) for e in errors))
        self.errors = errors


@dataclass(frozen=True)
class TrainerBackend:
    score_one: ScoreOne
    check: CheckSample | None = None
    max_samples: int | None = None
    error_score: float | None = None  # the default of `?error_score=`


def check_count(backend: TrainerBackend, count: int, field: str) -> None:
    if backend.max_samples is not None and count > backend.max_samples:
        raise BatchTooLarge(
            f"{field} has {count} samples; max_batch_samples is {backend.max_samples}", field=field
        )


def build_samples(
    backend: TrainerBackend, bodies: Sequence[dict[str, Any]], where: Where
) -> list[ScoreRequest]:
    """Each `/score` body validated and checked, all before any is scored (see the module docstring): a bad
    sample is the trainer's mistake, answered 4xx naming the trainer's field — never a 500 that blames the
    function or the gateway."""
    samples: list[ScoreRequest] = []
    errors: list[dict[str, Any]] = []
    for i, body in enumerate(bodies):
        try:
            sample = ScoreRequest.model_validate(body)
            if backend.check is not None:
                backend.check(sample)
        except ValidationError as exc:
            errors += _located(i, [dict(e) for e in exc.errors(include_url=False)], where)
        except InvalidSample as exc:
            errors += _located(i, exc.errors, where)
        except GatewayError as exc:
            field = exc.details.get("field")
            if isinstance(field, str):  # FieldTooLarge / TooDeep: name the trainer's field
                loc = where(i, field)
                exc.details["field"] = str(loc[0])
                exc.message = f"{'.'.join(map(str, loc))} ({field}): {exc.message}"
            raise
        else:
            samples.append(sample)
    if errors:
        raise RequestValidationError(errors)
    return samples


def _located(i: int, errors: list[dict[str, Any]], where: Where) -> list[dict[str, Any]]:
    located = []
    for err in errors:
        loc = [part if isinstance(part, int) else str(part) for part in err.get("loc", ())]
        field = str(loc[0]) if loc else ""
        located.append(
            {"type": err.get("type"), "msg": err.get("msg"), "loc": ("body", *where(i, field), *loc[1:])}
        )
    return located


def score_or_fallback(result: ScoreResult, fallback: float | None) -> float:
    if result.score is None:
        if fallback is None:  # raise_on_failure answered these already
            raise ValueError("no score and no fallback")
        return float(fallback)
    return float(result.score)


def raise_on_failure(results: Sequence[ScoreResult], fallback: float | None) -> None:
    """Raise the 500/504 answer when some sample has neither a score nor a fallback (see the docstring)."""
    if fallback is not None:
        return
    failed = [(i, r) for i, r in enumerate(results) if r.score is None]
    if not failed:
        return
    timed_out = all(r.status == "timeout" for _, r in failed)
    first = failed[0][1]
    error_type, error_message = (first.error.type, first.error.message) if first.error else (None, None)
    detail = f"{first.reward_fn} {first.status}: {error_type}: {error_message}"
    message = (
        f"{len(failed)} of {len(results)} samples failed without a fallback score (first: {detail}); "
        "set on_error_score for the function or ?error_score= on the URL to train on a flagged fallback"
    )
    samples = [
        {
            "index": i,
            "uid": r.uid,
            "status": r.status,
            "error": r.error.model_dump() if r.error is not None else None,
        }
        for i, r in failed
    ]
    error_cls: type[GatewayError] = RewardFunctionTimeout if timed_out else RewardFunctionFailed
    raise error_cls(message, fields=[], samples=samples)


def content_uid(body: Mapping[str, Any]) -> str:
    """A uid derived from the sample itself (its `/score` body): a trainer's retry of the same samples gets
    the same uids, so the idempotency cache answers it instead of calling every judge again."""
    return hashlib.blake2b(canonical_json(body), digest_size=16).hexdigest()


def gateway_backend(app: FastAPI, config: GatewayConfig) -> TrainerBackend:
    """The gateway's scoring path and checks (`/score`'s dispatch, input limits, cache and metrics). The
    gateway exists once the app's lifespan has run: it is looked up per call."""

    async def score_one(sample: ScoreRequest) -> ScoreResult:
        gateway: Gateway = app.state.gateway
        return await gateway.score(sample)

    def check(sample: ScoreRequest) -> None:
        """Input limits and the function (the gateway's 413/422/404 propagate), and a label when the
        function declares `ground_truth` without a default (the verl contract's reference-based functions;
        `ground_truth=None` is optional)."""
        gateway: Gateway = app.state.gateway
        fn, _ = gateway.resolve(sample, gateway.catalog)
        if sample.ground_truth in (None, "") and requires_ground_truth(fn.fn):
            message = f"reward function {fn.name!r} needs a label (ground truth) and this sample has none"
            raise InvalidSample([{"type": "missing", "loc": ("ground_truth",), "msg": message}])

    return TrainerBackend(score_one=score_one, check=check, max_samples=config.body.max_batch_samples)


def requires_ground_truth(fn: Callable[..., Any]) -> bool:
    try:
        param = inspect.signature(fn).parameters.get("ground_truth")
    except (TypeError, ValueError):
        return False
    return param is not None and param.default is inspect.Parameter.empty
