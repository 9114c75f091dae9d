"""Master-key probes on a judge whose every call fails (monitors/probes.py): they must not be what keeps the
pool failing. sglang-router counts each failed call towards opening the worker's circuit (then 503 for every
tenant), so a failed round stops at its first error, the next one waits twice as long up to `retry_max_s`,
and a round that gets answers resets it. Probes ask for at most the pool's `pool_max_tokens`.

A real gateway process and the SGLang stand-in (`tests/sglang_standin`) failing every call with a 400, as a
CPU pool refuses a `max_tokens` above its limit; the stand-in's own counters are the judge's view.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import free_port, running
from bench.harness.waiting import eventually
from rewardfleet.services.fleet.config import PoolConfig
from rewardfleet.services.fleet.default_probes import probe_max_tokens
from rewardfleet.services.gateway.monitors.probes import MASTER_KEYS
from tests.support.gateway import Gateway, start_gateway

pytestmark = pytest.mark.timeout(300)

RETRY_S = 0.2
RETRY_MAX_S = 0.8
CONCURRENCY = 2
QUESTION = {"question": "What is 7 * 8?", "answer": "56"}


def metric(gw: Gateway, name: str) -> float:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    found = re.search(rf'^{name}\{{pool="judge"\}} (\S+)$', text, re.M)
    if found is None:
        raise AssertionError(f"{name} not exported")
    return float(found.group(1))


def errors(gw: Gateway) -> float:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    found = re.search(r'^rewardfleet_judge_probes_total\{outcome="error",pool="judge"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


@pytest.fixture
def failing_judge(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", "judge",
           "--canned-text", "Verdict: incorrect", "--health-delay-s", "0",
           "--fail-rate", "1.0", "--fail-status", "400"]  # fmt: skip
    with running(cmd, tmp_path / "standin.log") as proc:
        proc.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=60)
        yield f"127.0.0.1:{port}"


def standin(address: str, path: str = "/standin/stats", body: dict[str, Any] | None = None) -> dict[str, Any]:
    url = f"http://{address}{path}"
    resp = httpx.post(url, json=body, timeout=10) if body is not None else httpx.get(url, timeout=10)
    result: dict[str, Any] = resp.json()
    return result


def test_probes_back_off_on_a_judge_that_fails_every_call(failing_judge: str, tmp_path: Path) -> None:
    config = {
        "workers": 1, "auth_exempt_metrics": True,
        "routers": {"judge": failing_judge},
        # no `generation`: the built-in judge's own default max_tokens (1024) is above the pool's 24
        "functions": {"judge": {"reward_kwargs": {"pool": "judge", "timeout_s": 30}}},
        "judge_probes": {"functions": ["judge"], "questions": [QUESTION], "retry_s": RETRY_S,
                         "retry_max_s": RETRY_MAX_S, "max_concurrency": CONCURRENCY,
                         "pool_max_tokens": {"judge": 24}},
    }  # fmt: skip
    gw = start_gateway(tmp_path, config, None)
    try:
        eventually(
            lambda: metric(gw, "rewardfleet_judge_probe_backoffs_total") >= 6,
            timeout_s=120, interval_s=0.1, what="six rounds backed off",
        )  # fmt: skip
        # doubled from retry_s after each failed round, then held at the cap
        assert metric(gw, "rewardfleet_judge_probe_backoff_seconds") == RETRY_MAX_S
        # each failed round sent at most the probes in flight at once, not one per master key
        before = metric(gw, "rewardfleet_judge_probe_backoffs_total")
        failed = standin(failing_judge)["failed"].get("/v1/chat/completions", 0)
        sent_errors = errors(gw)
        rounds = metric(gw, "rewardfleet_judge_probe_backoffs_total") + 1  # and the one under way
        assert before <= failed <= CONCURRENCY * rounds, (failed, rounds)
        assert sent_errors <= CONCURRENCY * rounds and len(MASTER_KEYS) > 4 * CONCURRENCY
        # what the judge was asked: the pool's limit, not the function's 1024
        asked = standin(failing_judge)["last_body"]["/v1/chat/completions"]
        assert asked["max_tokens"] == 24, asked

        # the judge recovers: the next round (within the cap) gets answers, and the back-off resets
        standin(failing_judge, "/standin/control", {"fail_rate": 0.0})
        report = eventually(
            lambda: (p := httpx.get(f"{gw.url}/monitors", timeout=10).json()["probes"]["judge"])["rounds"]
            >= 1 and p,
            timeout_s=60, interval_s=0.1, what="an answered round",
        )  # fmt: skip
        assert report["answered"] == len(MASTER_KEYS) and report["errors"] == 0, report
        assert metric(gw, "rewardfleet_judge_probe_backoff_seconds") == 0.0
        backed_off = metric(gw, "rewardfleet_judge_probe_backoffs_total")
        assert backed_off >= 6
    finally:
        gw.proc.stop()


def test_the_fleet_tells_probes_each_cpu_judge_pools_limit() -> None:
    pools = [
        ("tiny", PoolConfig(kind="judge", model_path="/j", server_args={"max-new-tokens-limit": 16})),
        ("judge", PoolConfig(kind="judge", model_path="/j")),
        ("gpu", PoolConfig(kind="judge", backend="sglang", model_path="/j")),
        ("rm", PoolConfig(kind="reward_model", model_path="/r")),
    ]
    assert probe_max_tokens(pools) == {"tiny": 16, "judge": 2048}
