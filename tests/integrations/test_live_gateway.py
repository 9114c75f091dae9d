"""Every protocol against a live gateway (real uvicorn, real function loading, process pool), with payloads
shaped exactly as each trainer builds them, including function errors, timeouts and a gateway restart."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import signal
import sys
from typing import Any

import httpx
import pytest

from bench.harness.processes import wait_until_in_flight
from rewardfleet.services.client import AsyncRewardClient, RetryPolicy, UnknownRewardFunction
from rewardfleet.services.integrations import verl_reward
from rewardfleet.services.integrations.trl import make_async_reward_func, make_reward_func
from tests.support.live_gateway import LiveGateway

IM_PROMPT = (
    "<|im_start|>system\nBe brief.<|im_end|>\n"
    "<|im_start|>user\nWhat is 6*7?<|im_end|>\n"
    "<|im_start|>assistant\n"
)
PATIENT = RetryPolicy(initial_backoff_s=0.05, max_backoff_s=1.0, max_attempts=200, max_elapsed_s=120)


# -- the Python client ------------------------------------------------------------------------------------


async def test_client_score_many_in_order_with_failures(live_gateway: LiveGateway) -> None:
    samples: list[dict[str, Any]] = [
        {"data_source": "d", "reward_fn": "exact", "solution_str": str(i), "ground_truth": str(i % 3)}
        for i in range(30)
    ]
    samples[5] = {"data_source": "d", "reward_fn": "boom", "solution_str": "x", "uid": "boom-5"}
    samples[7] = {"data_source": "d", "reward_fn": "slow", "solution_str": "x"}
    samples[9] = {"data_source": "d", "reward_fn": "fallback", "solution_str": "x"}
    async with AsyncRewardClient(live_gateway.url, max_concurrency=16) as client:
        results = await client.score_many(samples)
        with pytest.raises(UnknownRewardFunction):
            await client.score(data_source="d", reward_fn="no_such_fn", solution_str="x")
    for i, result in enumerate(results):
        if i in (5, 7, 9):
            continue
        assert result.ok and result.score == float(str(i) == str(i % 3)), (i, result)
        assert result.extra["pred"] == str(i) and result.reward_fn == "exact"
    boom, slow, fallback = results[5], results[7], results[9]
    assert boom.uid == "boom-5" and boom.status == "error" and boom.score is None
    assert boom.error is not None and "boom: x" in boom.error.message
    assert slow.status == "timeout" and slow.score is None
    assert fallback.status == "error" and fallback.score == -1.0 and fallback.fallback_score


async def test_gateway_restart_during_score_many(live_gateway: LiveGateway) -> None:
    """Kill the gateway mid-run, start it again on the same port: every sample still gets its answer."""
    samples = [
        {"data_source": "d", "reward_fn": "paced", "solution_str": str(i % 2), "ground_truth": "1"}
        for i in range(240)
    ]
    async with AsyncRewardClient(live_gateway.url, max_concurrency=8, retry=PATIENT, timeout_s=10) as client:
        scoring = asyncio.create_task(client.score_many(samples))
        await asyncio.to_thread(wait_until_in_flight, live_gateway.url, 4)  # requests in flight: mid-run
        assert not scoring.done()
        live_gateway.child.signal(signal.SIGKILL)
        await asyncio.to_thread(live_gateway.child.proc.wait, 10)
        # an outage of 0.5 s, the behaviour: clients meanwhile see refused connections
        await asyncio.sleep(0.5)
        await asyncio.to_thread(live_gateway.start)
        results = await asyncio.wait_for(scoring, 120)
    assert [r.status for r in results] == ["ok"] * len(samples)
    assert [r.score for r in results] == [float(i % 2) for i in range(240)]
    assert max(r.attempts for r in results) > 1  # some really were retried across the restart


# -- OpenRLHF: --reward.remote_url http://gateway/openrlhf[/fn] ------------------------------------------


def openrlhf_payload(*responses: str, label: Any = "42") -> dict[str, Any]:
    """As OpenRLHF builds it: query = decode(prompt_ids + response_ids, skip_special_tokens=False)."""
    return {
        "query": [IM_PROMPT + r + "<|im_end|>" for r in responses],
        "prompts": [IM_PROMPT] * len(responses),
        "labels": [label] * len(responses),
    }


def test_openrlhf_protocol(live_gateway: LiveGateway) -> None:
    with httpx.Client(base_url=live_gateway.url, timeout=30) as http:
        resp = http.post("/openrlhf/exact", json=openrlhf_payload("42"))
        assert resp.status_code == 200, resp.text
        assert resp.json() == {
            "rewards": [1.0],
            "scores": [1.0],
            "extra_logs": {"reward_failed": [0.0], "query_split_failed": [0.0], "acc": [1.0]},
        }
        # default route: data_source "openrlhf" → the gateway's default function (exact); several samples
        resp = http.post("/openrlhf", json=openrlhf_payload("42", "41", "42"))
        assert resp.json()["rewards"] == [1.0, 0.0, 1.0]
        # empty lists (OpenRLHF sends them when it has more servers than samples)
        resp = http.post("/openrlhf", json={"query": [], "prompts": [], "labels": []})
        assert resp.status_code == 200 and resp.json()["rewards"] == []
        # function error → 500 envelope (OpenRLHF retries, then stops); timeout → 504
        resp = http.post("/openrlhf/boom", json=openrlhf_payload("42"))
        assert resp.status_code == 500 and "boom: 42<|im_end|>" in resp.json()["error"]["message"]
        resp = http.post("/openrlhf/slow", json=openrlhf_payload("42"))
        assert resp.status_code == 504 and resp.json()["error"]["type"] == "RewardFunctionTimeout"
        # explicit fallbacks are numbers, flagged
        resp = http.post("/openrlhf/boom?error_score=-0.5", json=openrlhf_payload("42"))
        assert resp.json()["rewards"] == [-0.5] and resp.json()["extra_logs"]["reward_failed"] == [1.0]
        resp = http.post("/openrlhf/fallback", json=openrlhf_payload("42"))
        assert resp.json()["rewards"] == [-1.0] and resp.json()["extra_logs"]["reward_failed"] == [1.0]
        # unknown function: the gateway's own 404 envelope
        resp = http.post("/openrlhf/no_such_fn", json=openrlhf_payload("42"))
        assert resp.status_code == 404 and "error" in resp.json()
        # the protocol calls show up in the gateway's metrics like /score calls
        metrics = http.get("/metrics").text
        assert "exact" in metrics


def _cache_hits(http: httpx.Client) -> float:
    line = 'rewardfleet_gateway_result_cache_answers_total{how="hit"} '
    (value,) = [
        float(x.removeprefix(line)) for x in http.get("/metrics").text.splitlines() if x.startswith(line)
    ]
    return value


def test_openrlhf_retry_is_answered_from_the_cache(live_gateway: LiveGateway) -> None:
    """OpenRLHF retries a request after a 5xx or a dropped connection; the samples get content-derived uids,
    so the retry is answered from the idempotency cache instead of running every function again."""
    payload = openrlhf_payload("42", "41", "40")
    with httpx.Client(base_url=live_gateway.url, timeout=30) as http:
        first = http.post("/openrlhf/paced", json=payload)
        hits = _cache_hits(http)
        retry = http.post("/openrlhf/paced", json=payload)
        assert retry.json() == first.json() and first.status_code == 200
        assert _cache_hits(http) == hits + 3


# -- slime: --rm-url http://gateway/slime[/fn] --reward-key score ----------------------------------------


def test_slime_protocol(live_gateway: LiveGateway) -> None:
    with httpx.Client(base_url=live_gateway.url, timeout=30) as http:
        payload = {"prompt": IM_PROMPT, "response": "42", "label": "42"}  # slime's remote_rm payload
        resp = http.post("/slime/exact", json=payload)
        assert resp.status_code == 200, resp.text
        data = resp.json()
        assert (
            data["score"] == 1.0 and data["acc"] is True and data["pred"] == "42" and data["status"] == "ok"
        )
        messages = [{"role": "user", "content": "What is 6*7?"}]
        resp = http.post("/slime", json={"prompt": messages, "response": "41", "label": "42"})
        assert resp.json()["score"] == 0.0 and resp.json()["reward_fn"] == "exact"
        resp = http.post("/slime/boom", json=payload)
        assert resp.status_code == 500
        resp = http.post("/slime/slow?error_score=0", json=payload)
        assert (
            resp.status_code == 200 and resp.json()["score"] == 0.0 and resp.json()["reward_failed"] is True
        )


# -- TRL: GRPOTrainer(reward_funcs=[...]) ------------------------------------------------------------------


def test_trl_reward_funcs(live_gateway: LiveGateway) -> None:
    prompts = [[{"role": "user", "content": "What is 6*7?"}]] * 3
    completions = [[{"role": "assistant", "content": c}] for c in ("42", "41", "42")]
    columns = {"ground_truth": ["42", "42", "42"], "data_source": ["d"] * 3}
    sync_fn = make_reward_func(live_gateway.url, reward_fn="exact")
    assert sync_fn(
        prompts=prompts, completions=completions, completion_ids=None, trainer_state=None, **columns
    ) == [1.0, 0.0, 1.0]
    failing = make_reward_func(live_gateway.url, reward_fn="boom")
    assert failing(prompts=["p"], completions=["c"]) == [None]

    async_fn = make_async_reward_func(live_gateway.url, reward_fn="exact")

    async def trl_loop() -> list[float | None]:
        try:
            return await async_fn(prompts=["2+2="] * 2, completions=["4", "5"], ground_truth=["4", "4"])
        finally:
            await async_fn.aclose()  # type: ignore[attr-defined]

    assert asyncio.run(trl_loop()) == [1.0, 0.0]


# -- verl: custom_reward_function.path = services/integrations/verl_reward.py ------------------------------


async def test_verl_reward_file(live_gateway: LiveGateway) -> None:
    spec = importlib.util.spec_from_file_location("custom_module", verl_reward.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    reward_kwargs = {"gateway_url": live_gateway.url.removeprefix("http://"), "reward_fn": "exact"}

    async def verl_call(solution: str, **extra: Any) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"reward_router_address": None, "reward_model_tokenizer": None}
        kwargs |= {
            "data_source": "openai/gsm8k",
            "solution_str": solution,
            "ground_truth": "42",
            "extra_info": {"index": 0},
        }
        return await module.compute_score(**(kwargs | reward_kwargs | extra))

    try:
        results = await asyncio.wait_for(asyncio.gather(*(verl_call(s) for s in ("42", "41"))), 60)
        assert [r["score"] for r in results] == [1.0, 0.0]
        assert set(results[0]) == set(results[1]) == set(verl_reward.KEYS)
        with pytest.raises(module.RewardFunctionFailed):
            await verl_call("42", reward_fn="boom")
        fallback = await verl_call("42", reward_fn="fallback")
        assert fallback["score"] == -1.0 and fallback["reward_failed"] == 1.0
        assert set(fallback) == set(results[0]) and math.isnan(fallback["acc"]) and fallback["pred"] == ""
    finally:
        await module.aclose()


async def test_verl_multi_turn_sample_unchanged(live_gateway: LiveGateway) -> None:
    """What verl 0.9.1 passes a reward function for an agent-loop (multi-turn, tool) sample, built as its code
    builds it: `NaiveRewardManager.run_single` (verl/experimental/reward_loop/reward_manager/naive.py) decodes
    the whole response (assistant turns and tool responses, `skip_special_tokens=True`), merges the agent
    loop's `tool_extra_fields` (ToolAgentLoop's `extra_fields` + `turn_scores`/`tool_rewards`) into the
    dataset's extra_info, and adds `num_turns` (a numpy integer from `__num_turns__`) and
    `rollout_reward_scores`. No messages: verl keeps them in the agent loop."""
    import numpy as np

    solution = (
        "I will check my answer.\n<tool_call>\n"
        '{"name": "calc_gsm8k_reward", "arguments": {"answer": "72"}}\n</tool_call>user\n'
        "<tool_response>\nCurrent parsed answer='72' reward=1.0\n</tool_response>\nassistant\n"
        "The tool agrees.\n#### 72"
    )
    extra_info: dict[str, Any] = {
        "index": 7,
        "split": "train",
        "need_tools_kwargs": True,
        "tools_kwargs": {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": "72"}}},
        "interaction_kwargs": {"query": "How many?", "ground_truth": "72"},
    }
    tool_extra_fields = {"turn_scores": [], "tool_rewards": [0.0, np.float64(1.0)], "max_global_steps": None}
    extra_info.update(tool_extra_fields.items())
    extra_info["num_turns"] = np.array([5])[0]
    extra_info["rollout_reward_scores"] = {}
    reward_kwargs = {"gateway_url": live_gateway.url, "reward_fn": "multi_turn"}
    try:
        result = await verl_reward.compute_score(
            data_source="openai/gsm8k",
            solution_str=solution,
            ground_truth=np.str_("72"),
            extra_info=extra_info,
            **reward_kwargs,
        )
    finally:
        await verl_reward.aclose()
    assert set(result) == set(verl_reward.KEYS)
    assert (result["score"], result["reward_status"]) == (1.0, "ok")
    assert json.loads(result["turn_scores"]) == [0.0, 1.0] and json.loads(result["step_scores"]) is None
    extra = json.loads(result["reward_extra"])
    assert extra["num_turns"] == 5
    assert {"num_turns", "rollout_reward_scores", "tool_rewards", "turn_scores", "tools_kwargs"} <= set(
        extra["extra_info_keys"]
    )


def test_missing_label_is_422_naming_the_field(live_gateway: LiveGateway) -> None:
    """gsm8k declares `ground_truth` without a default: a sample without a label is the trainer's mistake."""
    with httpx.Client(base_url=live_gateway.url, timeout=30) as http:
        payload = openrlhf_payload("#### 42", "#### 42")
        payload["labels"] = ["42", ""]  # OpenRLHF sends "" when it has no --label_key
        resp = http.post("/openrlhf/gsm8k", json=payload)
        assert resp.status_code == 422, resp.text
        assert [f["loc"] for f in resp.json()["error"]["fields"]] == [["body", "labels", 1]]
        del payload["labels"]
        resp = http.post("/openrlhf?data_source=openai/gsm8k", json=payload)
        assert resp.status_code == 422
        assert [f["loc"] for f in resp.json()["error"]["fields"]] == [
            ["body", "labels", 0],
            ["body", "labels", 1],
        ]
        resp = http.post("/slime/gsm8k", json={"prompt": IM_PROMPT, "response": "#### 42"})
        assert resp.status_code == 422 and resp.json()["error"]["fields"][0]["loc"] == ["body", "label"]
        assert "'gsm8k' needs a label" in resp.json()["error"]["message"]
        # a prompt that is neither text nor chat messages names OpenRLHF's field too
        resp = http.post("/openrlhf", json={"query": ["x"], "prompts": [[None]], "labels": ["x"]})
        assert resp.status_code == 422
        assert {tuple(f["loc"][:3]) for f in resp.json()["error"]["fields"]} == {("body", "prompts", 0)}
        # a function whose ground_truth has a default (charsum: ground_truth=None) needs none
        resp = http.post("/slime/charsum", json={"prompt": IM_PROMPT, "response": "42", "label": None})
        assert resp.status_code == 200 and resp.json()["score"] == sum(map(ord, "42")) % 101 / 100
