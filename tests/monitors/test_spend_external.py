"""Spend on an external pool, counted from the provider's own `usage` as the gateway forwards the call (the
OpenAI stand-in counts words as tokens), with the pool's cap enforced twice: before the call for a function
that names the pool, and by the forwarding route (402 BudgetExhausted) for one that reaches it unnamed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port
from tests.support.gateway import Gateway, start_gateway

KEY = "sk-standin-spend-0123456789"
INPUT_USD, OUTPUT_USD, CAP_USD = 1000.0, 2000.0, 0.5


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("spend-external")
    port = free_port()
    standin = ChildProcess(
        [sys.executable, "-m", "tests.openai_standin", "--port", str(port), "--api-key", KEY],
        tmp / "standin.log",
    )
    standin.wait_http(f"http://127.0.0.1:{port}/standin/log", timeout_s=60)
    config = {
        "workers": 1, "result_cache_size": 0,
        # `judge` is also the built-in judge's default pool: the built-in reaches it without naming it
        "external_pools": {"judge": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "gpt-standin",
                                     "api_key_env": "SPEND_STANDIN_KEY"}},
        "pool_prices": {"judge": {"input_usd_per_million_tokens": INPUT_USD,
                                  "output_usd_per_million_tokens": OUTPUT_USD, "max_spend_usd": CAP_USD}},
        "functions": {"named": {"path": "rewardfleet.reward_fns.judge:compute_score",
                                "reward_kwargs": {"pool": "judge", "verdict": {"constrain": False}}},
                      "judge": {"reward_kwargs": {"verdict": {"constrain": False}}}},
    }  # fmt: skip
    os.environ["SPEND_STANDIN_KEY"] = KEY
    try:
        gw = start_gateway(tmp, config, None)
    finally:
        del os.environ["SPEND_STANDIN_KEY"]
    yield gw
    gw.proc.stop()
    standin.stop()


def score(gw: Gateway, fn: str, i: int) -> dict[str, Any]:
    body = {"data_source": "x", "reward_fn": fn, "solution_str": f"It is {i}.", "ground_truth": "56",
            "extra_info": {"question": "What is 7 * 8?"}}  # fmt: skip
    result: dict[str, Any] = gw.score(**body).json()
    return result


def test_external_spend_and_cap(gateway: Gateway) -> None:
    spent, i = 0.0, 0
    while spent < CAP_USD:  # the rule: admitted while the spend so far is below the cap
        out = score(gateway, "named", i)
        assert out["status"] == "ok", out
        usage = out["extra"]["usage"]
        spent += (usage["prompt_tokens"] * INPUT_USD + usage["completion_tokens"] * OUTPUT_USD) / 1e6
        i += 1
        assert i < 50
    refused = score(gateway, "named", i)
    assert refused["error"]["type"] == "BudgetExhausted" and refused["score"] is None, refused
    summary = httpx.get(f"{gateway.url}/monitors", timeout=10).json()["spend"]
    assert summary["pools"]["judge"]["spent_usd"] == pytest.approx(spent, abs=1e-9)
    assert summary["functions"]["named"]["spent_usd"] == pytest.approx(spent, abs=1e-9)
    metrics = httpx.get(f"{gateway.url}/metrics", timeout=10).text
    assert _value(metrics, 'pool="judge",reward_fn="named"') == pytest.approx(spent, abs=1e-9)
    # The built-in judge reaches the pool without naming it: the forwarding route refuses (402)...
    first = score(gateway, "judge", 0)
    assert first["status"] == "error" and first["score"] is None, first
    assert (
        "HTTP 402" in first["error"]["message"]
        and "BudgetExhausted: pool judge has spent" in first["error"]["message"]
    )
    # ...and from then on the scorer knows the pool and refuses before calling.
    second = score(gateway, "judge", 1)
    assert second["error"]["type"] == "BudgetExhausted", second


def _value(metrics: str, labels: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(f"rewardfleet_pool_cost_usd_total{{{labels}}} "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(labels)
