"""External pools: an OpenAI-compatible endpoint outside the fleet, used by `judge` and `score_model` graders.

Two endpoints, both real processes on 127.0.0.1:
- our CPU model server with `--api-key` (a tiny random-weight Llama: its verdicts are noise, but constrained
  decoding forces them into the parsed format, so the whole path is deterministic);
- a stand-in speaking the OpenAI protocol for what no real server here does: answering 429 + `Retry-After`.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import aiohttp
import httpx
import pytest
from prometheus_client import CollectorRegistry

from bench.harness.processes import ChildProcess, free_port
from bench.harness.tiny_models import build_tiny_llama
from rewardfleet.services.gateway.pools.config import ExternalPoolConfig
from rewardfleet.services.gateway.pools.external_pools import ExternalPools
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import RunningServer, start_server

STANDIN_KEY = "sk-standin-0123456789abcdef"
SERVER_KEY = "sk-ours-fedcba9876543210"
GATEWAY_KEY = "gateway-key-5e1c0b7a"
RETRY_AFTER_S = 1.0


@dataclass
class Endpoints:
    standin: str
    server: RunningServer


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    tmp = tmp_path_factory.mktemp("external")
    port = free_port()
    standin = ChildProcess(
        [sys.executable, "-m", "tests.openai_standin", "--port", str(port),
         "--api-key", STANDIN_KEY, "--rate-limit-first", "2", "--retry-after-s", str(RETRY_AFTER_S)],
        tmp / "standin.log",
    )  # fmt: skip
    server = None
    try:
        standin.wait_http(f"http://127.0.0.1:{port}/standin/log", timeout_s=60)
        model = build_tiny_llama(tmp / "tiny-llama", kind="causal")
        server = start_server(
            model, tmp, "--api-key", SERVER_KEY, "--served-model-name", "tiny", name="keyed"
        )
        yield Endpoints(f"http://127.0.0.1:{port}", server)
    finally:
        standin.stop()
        if server is not None:
            server.process.stop()


@pytest.fixture(scope="module")
def gateway(endpoints: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("external-gw")
    config = {
        "workers": 1,
        "api_keys": [GATEWAY_KEY],
        "external_pools": {
            "hosted": {"base_url": f"{endpoints.standin}/v1", "model": "gpt-standin",
                       "api_key_env": "STANDIN_KEY", "rpm": 100, "max_backoff_s": 10},
            "ours": {"base_url": f"{endpoints.server.url}/v1", "model": "tiny", "api_key_env": "OURS_KEY",
                     "constrained_decoding": True},
        },
        "functions": {"judge": {"timeout_s": 60, "reward_kwargs": {"pool": "hosted", "timeout_s": 60}}},
        "graders": {"tiny_grader": {"type": "score_model", "pool": "ours", "max_tokens": 40}},
    }  # fmt: skip
    os.environ["STANDIN_KEY"], os.environ["OURS_KEY"] = STANDIN_KEY, SERVER_KEY
    try:
        gw = start_gateway(tmp, config, None)
    finally:
        del os.environ["STANDIN_KEY"], os.environ["OURS_KEY"]
    gw.proc.wait_http(f"{gw.url}/health", timeout_s=60)
    yield gw
    gw.proc.stop()


def _post(gw: Gateway, **body: object) -> dict:
    resp = httpx.post(
        f"{gw.url}/score", json=body, headers={"Authorization": f"Bearer {GATEWAY_KEY}"}, timeout=90
    )
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _metrics(gw: Gateway) -> str:
    return httpx.get(f"{gw.url}/metrics", headers={"Authorization": f"Bearer {GATEWAY_KEY}"}, timeout=10).text


def _metric(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.match(rf"{name}\{{(.*)\}} (\S+)$", line)
        if m and ",".join(sorted(m.group(1).split(","))) == want:
            return float(m.group(2))
    raise AssertionError(f"{name}{{{want}}} not in /metrics")


def test_judge_backs_off_on_429_and_counts_real_usage(gateway: Gateway, endpoints: Endpoints) -> None:
    out = _post(gateway, data_source="x", reward_fn="judge", solution_str="4", ground_truth="4",
                extra_info={"question": "What is 2 + 2?"})  # fmt: skip
    assert out["status"] == "ok" and out["score"] == 1.0, out
    log = httpx.get(f"{endpoints.standin}/standin/log", timeout=10).json()
    assert [e["status"] for e in log] == [429, 429, 200]
    # Each retry waited at least what Retry-After asked (a lower bound: no upper bounds on a shared machine).
    assert all(b["t"] - a["t"] >= RETRY_AFTER_S * 0.99 for a, b in pairwise(log))
    assert {e["model"] for e in log} == {"gpt-standin"}  # the provider's name, not the function's
    assert all("regex" not in e["keys"] for e in log)  # SGLang-only fields never reach a hosted API
    metrics = httpx.get(
        f"{gateway.url}/metrics", headers={"Authorization": f"Bearer {GATEWAY_KEY}"}, timeout=10
    ).text
    labels = {"reward_fn": "judge", "pool": "hosted"}
    assert _metric(metrics, "rewardfleet_pool_rate_limited_total", **labels) == 2
    assert _metric(metrics, "rewardfleet_pool_requests_total", **labels, status="200") == 1
    prompt = _metric(metrics, "rewardfleet_pool_tokens_total", **labels, type="prompt")
    completion = _metric(metrics, "rewardfleet_pool_tokens_total", **labels, type="completion")
    assert prompt > 10 and completion == len(
        ["The", "response", "matches", "the", "reference.", "Verdict:", "correct"]
    )
    assert STANDIN_KEY not in metrics and STANDIN_KEY not in gateway.proc.log()


def test_score_model_grader_on_our_server_with_its_api_key(gateway: Gateway, endpoints: Endpoints) -> None:
    out = _post(gateway, data_source="x", reward_fn="tiny_grader", solution_str="x = 7", ground_truth="7",
                extra_info={"question": "Solve x + 3 = 10."})  # fmt: skip
    assert out["status"] == "ok" and out["score"] in (0.0, 1.0), out["error"]  # constrained: always a verdict
    # The gateway sent the key: without it the server refuses.
    assert httpx.get(f"{endpoints.server.url}/v1/models", timeout=10).status_code == 401
    metrics = httpx.get(
        f"{gateway.url}/metrics", headers={"Authorization": f"Bearer {GATEWAY_KEY}"}, timeout=10
    ).text
    assert (
        _metric(metrics, "rewardfleet_pool_tokens_total", reward_fn="graders", pool="ours", type="prompt") > 0
    )
    assert SERVER_KEY not in gateway.proc.log()


def test_forwarding_addresses_are_secret(gateway: Gateway) -> None:
    for path in ("/pools/guess/hosted/judge/v1/chat/completions", "/pools/x/y/z/v1/models"):
        resp = httpx.post(gateway.url + path, json={"messages": []}, timeout=10)
        assert resp.status_code == 404 and "hosted" not in resp.text


def test_budgets_count_the_usage_of_each_answer(endpoints: Endpoints) -> None:
    """In-process: after one answer the function's TPM window holds exactly the tokens `usage` reported."""
    os.environ["STANDIN_KEY"] = STANDIN_KEY
    try:
        cfg = ExternalPoolConfig(
            base_url=f"{endpoints.standin}/v1", model="m", api_key_env="STANDIN_KEY", tpm=5
        )
        pools = ExternalPools({"hosted": cfg}, CollectorRegistry())
    finally:
        del os.environ["STANDIN_KEY"]
    pool = pools.pools["hosted"]
    body = {"messages": [{"role": "user", "content": "one two three"}]}

    async def call() -> int:
        async with aiohttp.ClientSession() as session:
            return (await pool.forward(session, "fn", "chat/completions", body)).status

    assert asyncio.run(call()) == 200  # the stand-in's rate-limited answers are spent by the tests above
    budget = pool.budgets["fn"]
    assert budget._token_sum == 3 + len(
        ["The", "response", "matches", "the", "reference.", "Verdict:", "correct"]
    )
    assert budget.wait_s() > 0  # over its 5 tokens a minute: the next call waits for the window


def test_a_missing_key_variable_stops_start_up_naming_it(tmp_path: Path) -> None:
    pool = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "REWARDFLEET_TEST_UNSET_KEY"}
    config = {"workers": 1, "external_pools": {"p": pool}}
    with pytest.raises((RuntimeError, TimeoutError)) as err:
        start_gateway(tmp_path, config, None).proc.stop()
    assert "REWARDFLEET_TEST_UNSET_KEY" in str(err.value)


def test_dry_run_names_the_key_variable_never_the_key(tmp_path: Path) -> None:
    from bench.harness.processes import rewardfleet_cmd

    cfg = tmp_path / "fleet.yaml"
    cfg.write_text(
        "pools:\n  hosted:\n    kind: judge\n    backend: external\n"
        "    external: {base_url: 'https://api.example.com/v1', model: judge-large,\n"
        "               api_key_env: HOSTED_KEY}\n"
        f"run_dir: {tmp_path / 'run'}\n"
    )
    env = {**os.environ, "HOSTED_KEY": "sk-very-secret-value"}
    out = subprocess.run(rewardfleet_cmd("up", "--config", str(cfg), "--dry-run"), capture_output=True,
                         text=True, timeout=120, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "sk-very-secret-value" not in out.stdout + out.stderr
    assert "HOSTED_KEY" in out.stdout and "hosted" in out.stdout
