"""Spend counted fleet-wide: three gateway processes share a real redis-server behind a real round-robin
HAProxy; their `judge` calls go to a real CPU model server (tiny random-weight Llama, constrained verdicts),
whose `usage` is what is priced. Samples sent one after another must follow the cap rule exactly: a sample
is scored while the spend before it is below the cap, and gets BudgetExhausted from then on, whatever
replica takes it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from rich.console import Console

from bench.harness.redis_server import RedisServer
from bench.harness.tiny_models import build_tiny_llama
from rewardfleet.services.fleet.status import status_table
from tests.gateway.state_store.fleet import Fleet
from tests.support.model_server import RunningServer, start_server

INPUT_USD, OUTPUT_USD = 10.0, 40.0  # per million tokens: a call costs about $0.005 here
POOL_CAP_USD, FN_CAP_USD = 0.03, 0.02
JUDGE = "rewardfleet.reward_fns.judge:compute_score"


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("spend-judge")
    model = build_tiny_llama(tmp / "tiny-llama", kind="causal")
    running = start_server(model, tmp, "--served-model-name", "tiny", name="judge")
    yield running
    running.process.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, judge_server: RunningServer) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("spend-fleet")
    redis = RedisServer(tmp).start()
    address = judge_server.url.removeprefix("http://")
    kwargs = {"model": "tiny", "generation": {"max_tokens": 16}, "timeout_s": 120}
    price = {"input_usd_per_million_tokens": INPUT_USD, "output_usd_per_million_tokens": OUTPUT_USD}
    config = {
        "result_cache_size": 0,
        "routers": {"judge": address, "judge_capped": address},
        "pool_prices": {"judge": price, "judge_capped": {**price, "max_spend_usd": POOL_CAP_USD}},
        "functions": {
            # a function cap on the uncapped pool; a pool cap with no function cap
            "fn_capped": {"path": JUDGE, "max_spend_usd": FN_CAP_USD, "on_error_score": 0.0,
                          "reward_kwargs": {**kwargs, "pool": "judge"}},
            "pool_capped": {"path": JUDGE, "reward_kwargs": {**kwargs, "pool": "judge_capped"}},
        },
    }  # fmt: skip
    fleet = Fleet(tmp, redis, config)
    try:
        yield fleet.start(3)
    finally:
        fleet.stop()
        redis.stop()


def cost_usd(usage: dict[str, int]) -> float:
    return (usage["prompt_tokens"] * INPUT_USD + usage["completion_tokens"] * OUTPUT_USD) / 1e6


def cost_metric(fleet: Fleet, fn: str) -> list[float]:
    """`rewardfleet_pool_cost_usd_total` of `fn`, per replica."""
    values = []
    for port in fleet.ports:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        found = re.search(rf'rewardfleet_pool_cost_usd_total\{{pool="[^"]+",reward_fn="{fn}"\}} (\S+)', text)
        values.append(float(found.group(1)) if found else 0.0)
    return values


def run_until_refused(fleet: Fleet, fn: str, cap_usd: float, n: int = 12) -> float:
    """Send `n` samples one by one; check each against the rule; return the spend the answers account for."""
    spent = 0.0
    refused = 0
    for i in range(n):
        body: dict[str, Any] = {
            "data_source": "x", "reward_fn": fn, "solution_str": str(i % 10), "ground_truth": "4",
            "extra_info": {"question": "What is 2 + 2?"},
        }  # fmt: skip
        out = httpx.post(f"{fleet.url}/score", json=body, timeout=120).json()
        if spent < cap_usd - 1e-9:
            assert out["status"] == "ok", (i, spent, out)
            spent += cost_usd(out["extra"]["usage"])
        else:
            assert out["status"] == "error" and out["error"]["type"] == "BudgetExhausted", (i, spent, out)
            assert out["score"] is None and not out["fallback_score"]  # on_error_score does not apply
            refused += 1
    print(f"{fn}: {n - refused} scored, spent ${spent:.6f} (cap ${cap_usd})")
    assert refused >= 3  # the cap was reached within n samples and held on every replica
    return spent


def test_function_cap_stops_at_the_budget_across_three_replicas(fleet: Fleet) -> None:
    spent = run_until_refused(fleet, "fn_capped", FN_CAP_USD)
    assert spent >= FN_CAP_USD
    per_replica = cost_metric(fleet, "fn_capped")
    assert sum(per_replica) == pytest.approx(spent, abs=1e-9)
    assert sum(1 for v in per_replica if v > 0) >= 2  # the calls really were spread over replicas
    for port in fleet.ports:  # every replica reports the fleet-wide spend from Redis
        spend = httpx.get(f"http://127.0.0.1:{port}/monitors", timeout=10).json()["spend"]
        assert spend["functions"]["fn_capped"] == {"spent_usd": pytest.approx(spent, abs=1e-9),
                                                   "max_spend_usd": FN_CAP_USD}  # fmt: skip
        assert spend["pools"]["judge"]["spent_usd"] == pytest.approx(spent, abs=1e-9)


def test_pool_cap_stops_at_the_budget_across_three_replicas(fleet: Fleet) -> None:
    spent = run_until_refused(fleet, "pool_capped", POOL_CAP_USD)
    assert sum(cost_metric(fleet, "pool_capped")) == pytest.approx(spent, abs=1e-9)
    spend = httpx.get(f"{fleet.url}/monitors", timeout=10).json()["spend"]
    assert spend["pools"]["judge_capped"]["spent_usd"] == pytest.approx(spent, abs=1e-9)
    assert spend["pools"]["judge_capped"]["max_spend_usd"] == POOL_CAP_USD


def test_status_shows_spend_and_caps(fleet: Fleet) -> None:
    """`rewardfleet status` reads /monitors through the balancer: fleet-wide spend against each cap."""
    console = Console(width=200, record=True)
    console.print(status_table({"pid": 1, "gateway": {"url": fleet.url}, "pools": {}}))
    text = console.export_text()
    spend = httpx.get(f"{fleet.url}/monitors", timeout=10).json()["spend"]
    capped = spend["pools"]["judge_capped"]["spent_usd"]
    assert re.search(rf"judge_capped spend\s.*exhausted\s.*spent \${capped:,.4f} of \$0\.0300", text), text
    assert re.search(r"fn_capped \(function\) spend\s.*exhausted\s.*of \$0\.0200", text), text
    assert re.search(r"judge spend\s.*ok\s.*of no cap", text), text
