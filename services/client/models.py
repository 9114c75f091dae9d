"""Typed results (and a typed sample, for those who want one) of the gateway's `/score` API."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "error", "timeout", "group_timeout"]
_STATUSES: frozenset[str] = frozenset({"ok", "error", "timeout", "group_timeout"})


def new_uid() -> str:
    """A fresh sample uid (what the client fills in when the caller gave none)."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class ErrorInfo:
    """Why a sample has no (regular) score: the gateway's `{"type", "message"}`."""

    type: str
    message: str

    @classmethod
    def from_json(cls, data: Any) -> ErrorInfo | None:
        if not isinstance(data, Mapping):
            return None
        return cls(type=str(data.get("type") or "error"), message=str(data.get("message") or ""))


@dataclass(frozen=True)
class ScoreResult:
    """The answer for one sample.

    `score` is a float, or None when the function failed and no `on_error_score` is configured.
    `status` is "ok", "error" or "timeout". When the gateway substituted its configured `on_error_score`,
    `score` is set but `status` stays "error" and `fallback_score` is True (the gateway's field, same name)
    — check `ok`, not `score is not None`, to know whether the function itself succeeded.
    `attempts` counts the HTTP attempts the client made (1 = no retry).
    """

    uid: str
    score: float | None
    status: Status
    error: ErrorInfo | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    reward_fn: str | None = None
    data_source: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    fallback_score: bool = False
    attempts: int = 1
    # True when the gateway answered from its result cache or from a duplicate's running call.
    cached: bool = False
    # The scoring function's version (hash of its source and config), when the gateway reports one.
    version: str | None = None
    # Per-step / per-turn scores, when the function returned them (docs/trajectories.md).
    step_scores: list[float] | None = None
    turn_scores: list[float] | None = None
    # Named reward components, when the function or composite gave them (`{name: number}`).
    reward_components: dict[str, float] | None = None
    # Set only on results made by `score_many` for samples the client could not get scored at all.
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, uid: str, attempts: int = 1) -> ScoreResult:
        """Decode one gateway result; `uid` is the one the client sent (used if the answer lacks it)."""
        raw_score = data.get("score")
        score = None if raw_score is None else float(raw_score)
        status = str(data.get("status") or ("ok" if score is not None else "error"))
        if status not in _STATUSES:
            status = "error"
        extra = data.get("extra")
        extra_dict = dict(extra) if isinstance(extra, Mapping) else {}
        timings = data.get("timings")
        timings_dict = (
            {str(k): float(v) for k, v in timings.items() if isinstance(v, int | float)}
            if isinstance(timings, Mapping)
            else {}
        )
        # A score on a failed sample can only be the function's configured on_error_score.
        fallback_score = bool(data.get("fallback_score")) or (status != "ok" and score is not None)
        return cls(
            uid=str(data.get("uid") or uid),
            score=score,
            status=status,  # type: ignore[arg-type]
            error=ErrorInfo.from_json(data.get("error")),
            extra=extra_dict,
            reward_fn=_opt_str(data.get("reward_fn")),
            data_source=_opt_str(data.get("data_source")),
            timings=timings_dict,
            fallback_score=fallback_score,
            attempts=attempts,
            cached=bool(data.get("cached")),
            version=_opt_str(data.get("version")),
            step_scores=_opt_floats(data.get("step_scores")),
            turn_scores=_opt_floats(data.get("turn_scores")),
            reward_components=_opt_components(data.get("reward_components")),
        )

    @classmethod
    def client_failure(cls, uid: str, exc: BaseException, *, attempts: int = 0) -> ScoreResult:
        """A result standing in for a sample the client could not get scored (see `score_many`)."""
        return cls(
            uid=uid,
            score=None,
            status="error",
            error=ErrorInfo(type=type(exc).__name__, message=str(exc)),
            attempts=attempts or int(getattr(exc, "attempts", 0) or 0),
            exception=exc,
        )


@dataclass
class Sample:
    """One sample in the gateway's words (verl's names). Plain dicts with the same keys work everywhere too.

    `prompt` is a string or chat messages; `ground_truth` is any JSON value.
    """

    data_source: str
    solution_str: str
    ground_truth: Any = None
    extra_info: dict[str, Any] | None = None
    prompt: str | list[dict[str, Any]] | None = None
    reward_fn: str | None = None
    uid: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "data_source": self.data_source,
            "solution_str": self.solution_str,
            "ground_truth": self.ground_truth,
        }
        for key in ("extra_info", "prompt", "reward_fn", "uid"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        return body


def sample_body(sample: Sample | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body for one sample, with a `uid` filled in if it had none (a fresh dict; input untouched)."""
    body = sample.to_json() if isinstance(sample, Sample) else dict(sample)
    if not body.get("uid"):
        body["uid"] = new_uid()
    else:
        body["uid"] = str(body["uid"])
    return body


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_floats(value: Any) -> list[float] | None:
    if not isinstance(value, list):
        return None
    return [float(v) for v in value if isinstance(v, int | float) and not isinstance(v, bool)]


def _opt_components(value: Any) -> dict[str, float] | None:
    if not isinstance(value, Mapping):
        return None
    return {
        str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
