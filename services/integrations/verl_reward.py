"""A verl reward-function file that moves the reward computation to the fleet.

Point verl 0.9.1's trainer at it (`reward.custom_reward_function`, not the old top-level key that `main_ppo`
ignores):

    reward.custom_reward_function.path=pkg://rewardfleet.services.integrations.verl_reward
    reward.custom_reward_function.name=compute_score     # async; compute_score_sync: sync reward managers
    +reward.custom_reward_function.reward_kwargs.gateway_url=http://reward-gateway:8000  # or $REWARDFLEET_URL

Each sample is posted to `POST /score` (connection errors, 429 and 503 retried with the same uid) and
answered with one fixed key set (`KEYS`), because verl stacks a batch's extra info into columns named by the
first sample's keys across several reward processes. A failed sample with no fallback score raises
`RewardFunctionFailed`: verl has no "no reward" value, and a made-up 0 would train on a lie. Every key, the
failure rules, groups and images: docs/client.md ("verl").
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from rewardfleet.services.client import RewardFleetError, ScoreResult
from rewardfleet.services.integrations._common import (
    GROUP_KEY,
    ClientPerLoop,
    gateway_url,
    shared_sync_client,
)
from rewardfleet.services.integrations._verl_images import extract_images

logger = logging.getLogger(__name__)

STATUS_KEY, FAILED_KEY, ERROR_KEY, EXTRA_KEY = (
    "reward_status",
    "reward_failed",
    "reward_error",
    "reward_extra",
)
STEPS_KEY, TURNS_KEY = "step_scores", "turn_scores"
# The keys of every returned dict (plus `reward_kwargs.extra_keys`), whatever the function or the sample.
KEYS: tuple[str, ...] = (
    "score",
    "acc",
    "pred",
    STATUS_KEY,
    FAILED_KEY,
    ERROR_KEY,
    EXTRA_KEY,
    STEPS_KEY,
    TURNS_KEY,
)


class RewardFunctionFailed(RewardFleetError):
    """The gateway's function failed for this sample and no fallback score is configured."""


_clients = ClientPerLoop()


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    gateway_url: str | None = None,
    reward_fn: str | None = None,
    group_fn: str | None = None,
    error_score: float | None = None,
    extra_keys: list[str] | None = None,
    component_keys: list[str] | None = None,
    component_missing_score: float | None = None,
    timeout_s: float = 300.0,
    max_concurrency: int = 256,
    **_verl_kwargs: Any,
) -> dict[str, Any]:
    """verl's async reward-function contract, answered by the gateway."""
    client = _clients.get(_url(gateway_url), timeout_s=timeout_s, max_concurrency=max_concurrency)
    body = _body(data_source, solution_str, ground_truth, extra_info, reward_fn, group_fn)
    result = await client.score(body)
    out = to_verl(result, error_score=error_score, extra_keys=extra_keys)
    return with_components(out, result, component_keys, component_missing_score)


def compute_score_sync(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    gateway_url: str | None = None,
    reward_fn: str | None = None,
    group_fn: str | None = None,
    error_score: float | None = None,
    extra_keys: list[str] | None = None,
    component_keys: list[str] | None = None,
    component_missing_score: float | None = None,
    timeout_s: float = 300.0,
    max_concurrency: int = 256,
    **_verl_kwargs: Any,
) -> dict[str, Any]:
    """The same for verl's synchronous reward managers (one blocking call per sample, from any thread)."""
    client = shared_sync_client(_url(gateway_url), timeout_s=timeout_s, max_concurrency=max_concurrency)
    body = _body(data_source, solution_str, ground_truth, extra_info, reward_fn, group_fn)
    result = client.score(body)
    out = to_verl(result, error_score=error_score, extra_keys=extra_keys)
    return with_components(out, result, component_keys, component_missing_score)


async def aclose() -> None:
    """Close this event loop's gateway clients (verl never needs it; scripts that end their loops do)."""
    await _clients.aclose()


def to_verl(
    result: ScoreResult, *, error_score: float | None = None, extra_keys: Iterable[str] | None = None
) -> dict[str, Any]:
    """A gateway result as verl's dict return value (see the module docstring for the rules)."""
    failed = not result.ok
    score = result.score
    if score is None and error_score is not None:
        score = float(error_score)
    error = f"{result.error.type}: {result.error.message}" if result.error else ""
    if score is None:
        raise RewardFunctionFailed(
            f"reward function {result.reward_fn!r} {result.status} for sample {result.uid} "
            f"(data_source={result.data_source!r}): {error or 'no score'}; "
            "configure on_error_score on the gateway or reward_kwargs.error_score to train on a fallback"
        )
    if failed:
        logger.warning("sample %s: %s (%s); using fallback score %s", result.uid, result.status, error, score)
    extra = result.extra
    acc = extra.get("acc", math.nan if failed else float(score))
    out: dict[str, Any] = {
        "score": float(score),
        "acc": acc if isinstance(acc, bool | int | float) else math.nan,
        "pred": "" if extra.get("pred") is None else str(extra["pred"]),
        STATUS_KEY: result.status,
        FAILED_KEY: 1.0 if failed else 0.0,
        ERROR_KEY: error,
        EXTRA_KEY: json.dumps(extra, default=str, sort_keys=True),
        STEPS_KEY: json.dumps(result.step_scores),
        TURNS_KEY: json.dumps(result.turn_scores),
    }
    for key in extra_keys or ():
        if key not in out:
            out[key] = extra.get(key, math.nan)
    return out


def with_components(
    out: dict[str, Any],
    result: ScoreResult,
    component_keys: Iterable[str] | None,
    missing_score: float | None = None,
) -> dict[str, Any]:
    """`out` plus one column per `component_keys` name (see the module docstring)."""
    components = result.reward_components or {}
    for key in component_keys or ():
        if key in KEYS:
            raise ValueError(f"component_keys: {key!r} is one of the adapter's own keys {KEYS}")
        if key in components:
            out[key] = float(components[key])
        elif missing_score is not None:
            out[key] = float(missing_score)
        else:
            raise RewardFunctionFailed(
                f"reward function {result.reward_fn!r} gave no reward component {key!r} for sample "
                f"{result.uid} (it gave {sorted(components)}); "
                "set reward_kwargs.component_missing_score to train on one"
            )
    return out


def _url(explicit: str | None) -> str:
    return gateway_url(explicit)


def _body(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any,
    reward_fn: str | None,
    group_fn: str | None = None,
) -> dict[str, Any]:
    info = dict(extra_info) if isinstance(extra_info, Mapping) else {}
    group = info.pop(GROUP_KEY, None)
    info, images = extract_images(info)  # verl's multimodal sample shape (_verl_images.py)
    body: dict[str, Any] = {
        "data_source": str(data_source),
        "solution_str": solution_str,
        "ground_truth": _jsonable(ground_truth),
        "extra_info": _jsonable(info),
    }
    if images:
        body["images"] = images
    if reward_fn:
        body["reward_fn"] = reward_fn
    if isinstance(group, Mapping):  # verl_group.GroupRewardManager: the prompt's uid and rollout.n
        body["group_id"] = str(group["group_id"])
        body["group_size"] = int(group["group_size"])
        if group_fn:
            body["group_fn"] = group_fn
    return body


def _jsonable(value: Any) -> Any:
    """verl hands numpy values over (arrays in extra_info, numpy strings as ground truth): make them JSON."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars, without importing numpy
        return _jsonable(value.tolist())
    return value
