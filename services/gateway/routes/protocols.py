"""The OpenRLHF and slime reward protocols, served by the gateway with its own scoring path.

`make_protocol_router(score_one)` returns an `APIRouter`; `score_one` is the gateway's scoring callable: it
takes a `/score` request body (dict) and returns the `/score` answer (dict), so both protocols share the
gateway's functions, dispatch, isolation, timeouts and metrics. Exceptions it raises (unknown function → 404,
...) propagate to the gateway's own exception handlers.

Routes (the function is chosen like on `/score`: the path's `{reward_fn}` if given, else by `data_source`
through the gateway's table, else the gateway's default function):

    POST /openrlhf     POST /openrlhf/{reward_fn}     OpenRLHF --reward.remote_url (was --remote_rm_url)
    POST /slime        POST /slime/{reward_fn}        slime --rm-url (use --reward-key score)

Query parameters on every route: `data_source` (default for the request's samples) and `error_score` (see
below). Without `?data_source=`, a sample's data_source comes from its label when the label is an object with
a `data_source` key (OpenRLHF) or from the body's `data_source` field (slime), else it is the protocol's name
("openrlhf" / "slime"), which the gateway's default function picks up.

OpenRLHF sends `{"query": [prompt+response, ...], "prompts": [...], "labels": [...]}` (one or more samples,
possibly none). The response is recovered by stripping `prompts[i]` off the front of `query[i]`; when the
prompt is not a prefix (OpenRLHF left-truncated a long prompt to its last tokens) the longest tail of the
prompt that begins the query is stripped, whatever its length; failing that, the whole query is scored as the
response and `query_split_failed` is 1 in `extra_logs`. Labels that are objects with a `ground_truth` key are
unpacked (`ground_truth`, optional `data_source`, `extra_info`); other labels are the ground truth as is.

A sample without a label (absent, null or "", which is what OpenRLHF sends without `--label_key`) for a
function that declares `ground_truth` without a default is answered 422 naming the field (`labels.<i>`,
`label`) before anything is scored.

Failed samples (function error or timeout). Neither trainer has a "no reward" value: OpenRLHF turns `rewards`
into a tensor and slime uses whatever `score` holds. So a failure is never a number unless someone chose it:
1. a score the gateway set from the function's `on_error_score` is used, flagged (`reward_failed`);
2. else `?error_score=X` on the URL (or the router's `error_score` default) is used, flagged the same way;
3. else the whole request is answered HTTP 500 `RewardFunctionFailed` (function error) or 504
   `RewardFunctionTimeout` (function timeout) with the error envelope and the failing samples. Both trainers
   retry non-2xx answers (OpenRLHF 5 times, 1 s apart; slime 10 times with backoff), which absorbs transient
   timeouts; a persistent failure then stops the run loudly.

Sample uids: slime's `uid` when given; otherwise (and always for OpenRLHF, which sends none) a digest of the
sample's content, so a trainer's retry of the same samples is answered from the idempotency cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rewardfleet.services.gateway.errors import GatewayError, RewardFunctionFailed, RewardFunctionTimeout
from rewardfleet.services.gateway.routes.deps import Gateway
from rewardfleet.services.gateway.schemas import ScoreRequest, canonical_json

ScoreOne = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
# Checks a `/score` body before anything is scored: raises InvalidSample (or the gateway's 404).
CheckSample = Callable[[dict[str, Any]], None]


class InvalidSample(ValueError):
    """A sample the gateway cannot score as given; `errors` are pydantic-style, `loc` in `/score` names."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(str(e.get("msg")) for e in errors))
        self.errors = errors


# Where each `/score` field came from in the trainer's request (the 422 names the trainer's field).
_OPENRLHF_FIELDS = {
    "prompt": "prompts",
    "solution_str": "query",
    "ground_truth": "labels",
    "extra_info": "labels",
}
_SLIME_FIELDS = {"solution_str": "response", "ground_truth": "label"}

_SLIME_RESERVED = frozenset(
    {"score", "status", "error", "reward_fn", "data_source", "uid", "reward_failed", "extra", "timings"}
)
# Module level, not inside the factory: FastAPI resolves these string annotations in the module's namespace.
ErrorScore = Annotated[
    float | None, Query(description="score for failed samples (flagged); default: answer 500/504")
]
DataSource = Annotated[str | None, Query(description="data_source for samples that do not carry one")]


class OpenRLHFRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

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


class SlimeRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    prompt: str | list[dict[str, Any]] | None = None
    response: str
    label: Any = None
    data_source: str | None = None
    reward_fn: str | None = None
    extra_info: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    uid: str | None = None


def split_query(query: str, prompt: Any) -> tuple[str, bool]:
    """(response, split_ok): `query` minus its leading prompt (see the module docstring for the fallbacks)."""
    if not isinstance(prompt, str) or not prompt:
        return query, False
    if query.startswith(prompt):
        return query[len(prompt) :], True
    # A left-truncated prompt: the query starts with some tail of the prompt, of any length.
    overlap = _suffix_prefix_overlap(prompt, query)
    return (query[overlap:], True) if overlap else (query, False)


def _suffix_prefix_overlap(text: str, query: str) -> int:
    """Length of the longest suffix of `text` that is a prefix of `query` (KMP: linear in both lengths)."""
    pattern = query[: len(text)]
    if not pattern:
        return 0
    failure = [0] * len(
        pattern
    )  # failure[i]: longest proper prefix of pattern[: i + 1] that is also its suffix
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = failure[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        failure[i] = k
    matched = 0
    for char in text:
        while matched and (matched == len(pattern) or char != pattern[matched]):
            matched = failure[matched - 1]
        if char == pattern[matched]:
            matched += 1
    return matched


def make_protocol_router(
    score_one: ScoreOne, *, check: CheckSample | None = None, error_score: float | None = None
) -> APIRouter:
    """The OpenRLHF and slime routes around the gateway's `score_one` (see the module docstring)."""
    router = APIRouter(tags=["trainer protocols"])
    default_error_score = error_score

    def check_samples(bodies: Sequence[dict[str, Any]], where: Callable[[int, str], list[str | int]]) -> None:
        """Every sample checked before any is scored: a bad one (say, no label for a function that needs one)
        is the trainer's mistake, answered 422 naming the trainer's field — never a 500 that blames the
        function or the gateway."""
        if check is None:
            return
        errors: list[dict[str, Any]] = []
        for i, body in enumerate(bodies):
            try:
                check(body)
            except InvalidSample as exc:
                for err in exc.errors:
                    loc = [str(part) if not isinstance(part, int) else part for part in err.get("loc", ())]
                    field = str(loc[0]) if loc else ""
                    errors.append({**err, "loc": ("body", *where(i, field), *loc[1:])})
        if errors:
            raise RequestValidationError(errors)

    async def openrlhf(
        request: OpenRLHFRequest, reward_fn: str | None, data_source: str | None, error_score: float | None
    ) -> JSONResponse:
        bodies, split_ok = [], []
        for i, query in enumerate(request.query):
            prompt = request.prompts[i] if request.prompts is not None else None
            response, ok = split_query(query, prompt)
            split_ok.append(ok)
            ground_truth, label_source, extra_info = _unpack_label(
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
        check_samples(bodies, lambda i, field: [_OPENRLHF_FIELDS.get(field, field), i])
        results = list(await asyncio.gather(*(score_one(b) for b in bodies)))
        fallback = error_score if error_score is not None else default_error_score
        _raise_on_failure(results, fallback)
        rewards = [_score(r, fallback) for r in results]
        extra_logs: dict[str, list[float]] = {
            "reward_failed": [0.0 if r.get("status") == "ok" else 1.0 for r in results],
            "query_split_failed": [0.0 if ok else 1.0 for ok in split_ok],
        }
        for key in _common_numeric_keys(results):
            extra_logs.setdefault(key, [float(r["extra"][key]) for r in results])
        payload = OpenRLHFResponse(rewards=rewards, scores=list(rewards), extra_logs=extra_logs)
        return JSONResponse(payload.model_dump())

    @router.post("/openrlhf", response_model=OpenRLHFResponse)
    async def openrlhf_default(
        request: OpenRLHFRequest, data_source: DataSource = None, error_score: ErrorScore = None
    ) -> JSONResponse:
        return await openrlhf(request, None, data_source, error_score)

    @router.post("/openrlhf/{reward_fn}", response_model=OpenRLHFResponse)
    async def openrlhf_named(
        reward_fn: str,
        request: OpenRLHFRequest,
        data_source: DataSource = None,
        error_score: ErrorScore = None,
    ) -> JSONResponse:
        return await openrlhf(request, reward_fn, data_source, error_score)

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
        body["uid"] = request.uid or content_uid(body)
        check_samples([body], lambda _, field: [_SLIME_FIELDS.get(field, field)])
        result = await score_one(body)
        fallback = error_score if error_score is not None else default_error_score
        _raise_on_failure([result], fallback)
        extra = dict(result.get("extra") or {})
        payload: dict[str, Any] = {k: v for k, v in extra.items() if k not in _SLIME_RESERVED}
        payload.update(
            score=_score(result, fallback),
            status=result.get("status"),
            error=result.get("error"),
            reward_failed=result.get("status") != "ok",
            reward_fn=result.get("reward_fn"),
            data_source=result.get("data_source"),
            uid=result.get("uid") or body["uid"],
            extra=extra,
        )
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


def gateway_score_one(app: FastAPI) -> ScoreOne:
    """The gateway's scoring path as a `score_one` for `make_protocol_router` (same dispatch, limits, cache
    and metrics as `/score`). The gateway exists once the app's lifespan has run: it is looked up per call."""

    async def score_one(body: dict[str, Any]) -> dict[str, Any]:
        gateway: Gateway = app.state.gateway
        result = await gateway.score(ScoreRequest.model_validate(body))  # errors: the gateway's envelope
        return result.model_dump(mode="json")

    return score_one


def gateway_check(app: FastAPI) -> CheckSample:
    """The gateway's checks of one `/score` body, for `make_protocol_router(check=...)`: the sample's schema,
    its function (the gateway's 404 propagates), and a label when the function declares `ground_truth`
    without a default (the verl contract's reference-based functions; `ground_truth=None` is optional)."""

    def check(body: dict[str, Any]) -> None:
        try:
            sample = ScoreRequest.model_validate(body)
        except ValidationError as exc:
            raise InvalidSample(
                [{"type": e["type"], "loc": e["loc"], "msg": e["msg"]} for e in exc.errors()]
            ) from None
        gateway: Gateway = app.state.gateway
        fn, _ = gateway.resolve(sample, gateway.catalog)
        if sample.ground_truth in (None, "") and requires_ground_truth(fn.fn):
            message = f"reward function {fn.name!r} needs a label (ground truth) and this sample has none"
            raise InvalidSample([{"type": "missing", "loc": ("ground_truth",), "msg": message}])

    return check


def requires_ground_truth(fn: Callable[..., Any]) -> bool:
    try:
        param = inspect.signature(fn).parameters.get("ground_truth")
    except (TypeError, ValueError):
        return False
    return param is not None and param.default is inspect.Parameter.empty


def content_uid(body: Mapping[str, Any]) -> str:
    """A uid derived from the sample itself (its `/score` body): a trainer's retry of the same samples gets
    the same uids, so the idempotency cache answers it instead of calling every judge again."""
    return hashlib.blake2b(canonical_json(body), digest_size=16).hexdigest()


def _unpack_label(label: Any) -> tuple[Any, str | None, dict[str, Any]]:
    if isinstance(label, Mapping) and "ground_truth" in label:
        source = label.get("data_source")
        extra = label.get("extra_info")
        return (
            label["ground_truth"],
            str(source) if source else None,
            dict(extra) if isinstance(extra, Mapping) else {},
        )
    return label, None, {}


def _score(result: Mapping[str, Any], fallback: float | None) -> float:
    score = result.get("score")
    if score is None:
        if fallback is None:  # _raise_on_failure answered these already
            raise ValueError("no score and no fallback")
        return float(fallback)
    return float(score)


def _raise_on_failure(results: Sequence[Mapping[str, Any]], fallback: float | None) -> None:
    """Raise the 500/504 answer when some sample has neither a score nor a fallback (see the docstring)."""
    if fallback is not None:
        return
    failed = [(i, r) for i, r in enumerate(results) if r.get("score") is None]
    if not failed:
        return
    timed_out = all(r.get("status") == "timeout" for _, r in failed)
    first = failed[0][1]
    error = first.get("error") or {}
    detail = f"{first.get('reward_fn')} {first.get('status')}: {error.get('type')}: {error.get('message')}"
    message = (
        f"{len(failed)} of {len(results)} samples failed without a fallback score (first: {detail}); "
        "set on_error_score for the function or ?error_score= on the URL to train on a flagged fallback"
    )
    samples = [
        {"index": i, "uid": r.get("uid"), "status": r.get("status"), "error": r.get("error")}
        for i, r in failed
    ]
    error_cls: type[GatewayError] = RewardFunctionTimeout if timed_out else RewardFunctionFailed
    raise error_cls(message, fields=[], samples=samples)


def _common_numeric_keys(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """Extra keys that every result has as a number (bools count): OpenRLHF logs their means."""
    if not results:
        return []
    keys: list[str] | None = None
    for result in results:
        extra = result.get("extra") or {}
        numeric = [k for k, v in extra.items() if isinstance(v, bool | int | float)]
        keys = numeric if keys is None else [k for k in keys if k in numeric]
    return keys or []
