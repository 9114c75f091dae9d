"""The verl reward file, loaded as verl loads `custom_reward_function.path`, against a scripted gateway."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import math
import sys
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import pytest

from rewardfleet.services.client import RewardFleetError
from rewardfleet.services.integrations import verl_reward
from tests.client.fake_gateway import FakeGateway, Reply, ok_reply


def load_like_verl(path: str) -> ModuleType:
    """verl: spec_from_file_location("custom_module", path), exec, then getattr(module, name)."""
    spec = importlib.util.spec_from_file_location("custom_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    return module


def scripted(body: dict[str, Any], attempt: int) -> Reply:
    reply = ok_reply(body, attempt)
    answer = body["solution_str"]
    if answer == "boom":
        return Reply(
            body={
                "uid": body["uid"],
                "score": None,
                "status": "error",
                "extra": {},
                "reward_fn": "dapo",
                "error": {"type": "ValueError", "message": "boom"},
                "timings": {},
            }
        )
    if answer == "fallback":
        return Reply(
            body={
                "uid": body["uid"],
                "score": -1.0,
                "status": "timeout",
                "extra": {},
                "error": {"type": "timeout", "message": "slow"},
                "timings": {},
            }
        )
    correct = answer == body["ground_truth"]
    reply.body["score"] = 1.0 if correct else -1.0
    # like math_dapo, plus a key that only shows up sometimes
    reply.body["extra"] = {"acc": correct, "pred": answer} | ({"bonus": 0.5} if answer == "42" else {})
    return reply


@pytest.fixture
def gateway() -> Iterator[FakeGateway]:
    with FakeGateway(scripted) as gw:
        yield gw


@pytest.fixture
async def module() -> AsyncIterator[ModuleType]:
    loaded = load_like_verl(verl_reward.__file__)
    yield loaded
    await loaded.aclose()


@pytest.fixture
def sync_module() -> ModuleType:
    return load_like_verl(verl_reward.__file__)


async def call_like_verl(fn: Any, reward_kwargs: dict[str, Any], **call: Any) -> dict[str, Any]:
    """verl's reward loop: keyword call with its router arguments, reward_kwargs merged and winning."""
    kwargs = {"reward_router_address": None, "reward_model_tokenizer": None, **call, **reward_kwargs}
    result = fn(**kwargs)
    return await result if inspect.isawaitable(result) else result


async def test_async_compute_score_returns_consistent_dicts(gateway: FakeGateway, module: ModuleType) -> None:
    assert inspect.iscoroutinefunction(module.compute_score)
    kw = {"gateway_url": gateway.url}
    calls = [
        {"data_source": "math_dapo", "solution_str": s, "ground_truth": "42", "extra_info": {"index": i}}
        for i, s in enumerate(["41", "42", "7"])
    ]
    results = await asyncio.gather(*(call_like_verl(module.compute_score, kw, **c) for c in calls))
    first, second, _third = results
    assert first["score"] == -1.0 and first["acc"] is False and first["pred"] == "41"
    assert second["score"] == 1.0 and json.loads(second["reward_extra"])["bonus"] == 0.5
    assert first["reward_failed"] == 0.0 and first["reward_status"] == "ok" and first["reward_error"] == ""
    # one key set for every sample, whatever extras the function returned (verl stacks them into columns)
    assert all(set(r) == set(verl_reward.KEYS) for r in results)
    assert gateway.bodies[0]["data_source"] == "math_dapo" and gateway.bodies[0]["extra_info"]["index"] in {
        0,
        1,
        2,
    }


async def test_extra_keys_add_columns(gateway: FakeGateway, module: ModuleType) -> None:
    kw = {"gateway_url": gateway.url, "extra_keys": ["bonus", "acc"]}
    with_bonus, without = [
        await call_like_verl(module.compute_score, kw, data_source="d", solution_str=s, ground_truth="42")
        for s in ("42", "1")
    ]
    assert set(with_bonus) == set(without) == {*verl_reward.KEYS, "bonus"}
    assert with_bonus["bonus"] == 0.5 and math.isnan(without["bonus"])


async def test_failures_raise_or_use_an_explicit_fallback(gateway: FakeGateway, module: ModuleType) -> None:
    kw: dict[str, Any] = {"gateway_url": gateway.url}
    with pytest.raises(module.RewardFunctionFailed, match="ValueError: boom") as info:
        await call_like_verl(module.compute_score, kw, data_source="d", solution_str="boom", ground_truth="1")
    assert isinstance(info.value, RewardFleetError)
    fallback = await call_like_verl(
        module.compute_score, kw, data_source="d", solution_str="fallback", ground_truth="1"
    )
    assert (
        fallback["score"] == -1.0
        and fallback["reward_failed"] == 1.0
        and fallback["reward_status"] == "timeout"
        and math.isnan(fallback["acc"])  # a failed sample is not an accurate one, nor a wrong one
    )
    kw["error_score"] = 0.0
    explicit = await call_like_verl(
        module.compute_score, kw, data_source="d", solution_str="boom", ground_truth="1"
    )
    assert (
        explicit["score"] == 0.0 and explicit["reward_failed"] == 1.0 and "boom" in explicit["reward_error"]
    )


def test_sync_variant_and_url_from_environment(
    gateway: FakeGateway, sync_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDFLEET_URL", f"127.0.0.1:{gateway.port}")
    import numpy as np

    result = sync_module.compute_score_sync(
        data_source="d", solution_str="3", ground_truth=np.str_("3"), extra_info={"arr": np.arange(2)}
    )
    assert result["score"] == 1.0
    assert gateway.bodies[-1]["extra_info"] == {"arr": [0, 1]} and gateway.bodies[-1]["ground_truth"] == "3"
