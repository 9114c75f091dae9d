"""External-pool calls charged to the calling tenant, over a real gateway and the OpenAI stand-in (a hosted
API cannot run here), in memory and on a real redis-server: each tenant's dollars are its own (from the
provider's `usage`), its caps stop its calls (429 at admission, then 402 at the forwarding route for calls
already admitted), and the forwarding addresses a function gets name the tenant by an unguessable token."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port
from bench.harness.redis_server import RedisServer
from bench.harness.tenants import ADMIN, KEY_A, KEY_B, auth
from tests.gateway.tenants.helpers import gateway

STANDIN_KEY = "sk-standin-tenants-0123456789"
INPUT_USD, OUTPUT_USD = 1000.0, 2000.0
A_TOTAL_USD = 0.2


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("standin")
    port = free_port()
    proc = ChildProcess(
        [sys.executable, "-m", "tests.openai_standin", "--port", str(port), "--api-key", STANDIN_KEY],
        tmp / "standin.log",
    )
    proc.wait_http(f"http://127.0.0.1:{port}/standin/log", timeout_s=60)
    yield f"http://127.0.0.1:{port}"
    proc.stop()


def config(standin: str) -> dict[str, Any]:
    return {
        "builtin_package": None, "result_cache_size": 0,
        "external_pools": {"hosted": {"base_url": f"{standin}/v1", "model": "gpt-standin",
                                      "api_key_env": "TENANT_STANDIN_KEY"}},
        "pool_prices": {"hosted": {"input_usd_per_million_tokens": INPUT_USD,
                                   "output_usd_per_million_tokens": OUTPUT_USD}},
        "functions": {"named": {"path": "rewardfleet.reward_fns.judge:compute_score", "max_concurrency": 1,
                                "reward_kwargs": {"pool": "hosted", "verdict": {"constrain": False}}}},
        "tenants": {"a": {"api_keys": [KEY_A], "quotas": {"usd_total": A_TOTAL_USD}},
                    "b": {"api_keys": [KEY_B]},
                    "ops": {"api_keys": [ADMIN], "admin": True}},
    }  # fmt: skip


@pytest.fixture(params=["memory", "redis"])
def base(
    request: pytest.FixtureRequest, standin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv("TENANT_STANDIN_KEY", STANDIN_KEY)
    server = RedisServer(tmp_path).start() if request.param == "redis" else None
    try:
        with gateway(tmp_path, config(standin), server.url if server else None) as url:
            yield url
    finally:
        if server is not None:
            server.stop()


def sample(i: int) -> dict[str, Any]:
    return {"data_source": "x", "reward_fn": "named", "solution_str": f"It is {i}.", "ground_truth": "56",
            "extra_info": {"question": "What is 7 * 8?"}}  # fmt: skip


def cost(result: dict[str, Any]) -> float:
    usage = result["extra"]["usage"]
    return float(usage["prompt_tokens"] * INPUT_USD + usage["completion_tokens"] * OUTPUT_USD) / 1e6


def usd_total(base: str, key: str) -> float:
    return float(
        httpx.get(base + "/tenants/self", headers=auth(key), timeout=10).json()["usage"]["usd_total"]
    )


def test_external_spend_is_the_tenants(base: str) -> None:
    b = httpx.post(base + "/score", json=sample(0), headers=auth(KEY_B), timeout=60).json()
    assert b["status"] == "ok", b
    assert usd_total(base, KEY_B) == pytest.approx(cost(b), abs=1e-9) and cost(b) > 0
    assert usd_total(base, KEY_A) == 0.0  # b's call is not a's
    # a: a batch, one call at a time (max_concurrency 1): admitted while a had spent nothing, its calls run
    # until a's usd_total is spent, then the forwarding route refuses the rest (402, typed, not a silent 0)
    batch = {"samples": [sample(i) for i in range(1, 9)]}
    results = httpx.post(base + "/score/batch", json=batch, headers=auth(KEY_A), timeout=120).json()[
        "results"
    ]
    ok = [r for r in results if r["status"] == "ok"]
    refused = [r for r in results if r["status"] != "ok"]
    spent = sum(cost(r) for r in ok)
    assert ok and refused, results
    assert spent >= A_TOTAL_USD and spent - cost(ok[-1]) < A_TOTAL_USD  # stopped at the cap, not before
    for r in refused:
        assert r["score"] is None and "HTTP 402" in r["error"]["message"], r
        assert "usd_total" in r["error"]["message"], r
        assert re.search(r"/pools/(?!<token>/)", r["error"]["message"]) is None, r  # no token shown
    assert usd_total(base, KEY_A) == pytest.approx(spent, abs=1e-9)
    # ... and a's next request is refused at admission, naming the quota; b still works
    again = httpx.post(base + "/score", json=sample(99), headers=auth(KEY_A), timeout=60)
    assert again.status_code == 429 and again.json()["error"]["quota"] == "usd_total"
    assert (
        httpx.post(base + "/score", json=sample(98), headers=auth(KEY_B), timeout=60).json()["status"] == "ok"
    )
    metrics = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    found = re.search(r'^rewardfleet_tenant_spend_usd_total\{tenant="a"\} (\S+)$', metrics, re.M)
    assert found and float(found.group(1)) == pytest.approx(spent, abs=1e-9)


def test_a_forged_tenant_token_is_refused(base: str) -> None:
    """A forwarding token that is neither the gateway's nor a tenant's is the route's usual 404."""
    forged = httpx.post(
        base + "/pools/not-a-token-of-anyone-000000000/hosted/named/v1/chat/completions",
        json={"messages": []},
        timeout=10,
    )
    assert forged.status_code == 404
