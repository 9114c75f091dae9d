"""`rewardfleet_pool_tokens_total` for a fleet pool: the judge's prompt and completion tokens, as the pool's
server reported them (`usage`), counted per function and pool. A real CPU model server (tiny random-weight
Llama; constrained decoding makes its verdicts parse) stands where the pool's router would be."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.tiny_models import build_tiny_llama
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import RunningServer, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("pool-tokens")
    model = build_tiny_llama(tmp / "tiny-llama", kind="causal")
    running = start_server(model, tmp, "--served-model-name", "tiny", name="judge")
    yield running
    running.process.stop()


@pytest.fixture(scope="module")
def gateway(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("pool-tokens-gw")
    config = {
        "workers": 1, "result_cache_size": 0,
        "routers": {"judge": server.url.removeprefix("http://")},
        "functions": {"judge": {"timeout_s": 120, "reward_kwargs": {
            "pool": "judge", "model": "tiny", "generation": {"max_tokens": 24}, "timeout_s": 120,
        }}},
    }  # fmt: skip
    gw = start_gateway(tmp, config, None)
    yield gw
    gw.proc.stop()


def _tokens(gw: Gateway, kind: str) -> float:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    want = {'reward_fn="judge"', 'pool="judge"', f'type="{kind}"'}
    for line in text.splitlines():
        m = re.match(r"rewardfleet_pool_tokens_total\{(.*)\} (\S+)$", line)
        if m and set(m.group(1).split(",")) == want:
            return float(m.group(2))
    return 0.0


def test_judge_tokens_on_a_fleet_pool_are_counted(gateway: Gateway, tmp_path: Path) -> None:
    assert _tokens(gateway, "prompt") == 0.0
    usages = []
    for answer in ("4", "5"):
        out = gateway.score(
            data_source="x", reward_fn="judge", solution_str=answer, ground_truth="4",
            extra_info={"question": "What is 2 + 2?"},
        ).json()  # fmt: skip
        assert out["status"] == "ok", out
        assert out["extra"]["judge_pool"] == "judge"
        usages.append(out["extra"]["usage"])
    prompt = sum(u["prompt_tokens"] for u in usages)
    completion = sum(u["completion_tokens"] for u in usages)
    assert prompt > 10 and completion > 0
    assert _tokens(gateway, "prompt") == prompt
    assert _tokens(gateway, "completion") == completion
