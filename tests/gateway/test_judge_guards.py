"""Guards before the judge, through the gateway: a master-key answer is scored 0 by a guard (status ok,
`extra.guard`), the judge server is never asked, and `rewardfleet_judge_guard_total{reward_fn,guard}` counts
it; a misspelt guard setting stops start-up naming it. A real CPU model server (tiny random-weight Llama)
is the judge pool."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, free_port
from bench.harness.tiny_models import build_tiny_llama
from tests.support.gateway import Gateway, gateway_cmd, start_gateway, write_config
from tests.support.model_server import RunningServer, start_server

QUESTION = {"question": "What is 2 + 2?"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("guards")
    model = build_tiny_llama(tmp / "tiny-llama", kind="causal")
    running = start_server(model, tmp, "--served-model-name", "tiny", name="judge")
    yield running
    running.process.stop()


def _config(server: RunningServer, **judge_kwargs: object) -> dict:
    kwargs = {
        "pool": "judge",
        "model": "tiny",
        "generation": {"max_tokens": 24},
        "timeout_s": 120,
        **judge_kwargs,
    }
    return {
        "workers": 1, "result_cache_size": 0,
        "routers": {"judge": server.url.removeprefix("http://")},
        "functions": {
            "judge": {"timeout_s": 120, "reward_kwargs": kwargs},
            "rule_then_judge": {"timeout_s": 120, "reward_kwargs": {**kwargs, "rule": "math"}},
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
def gateway(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = start_gateway(tmp_path_factory.mktemp("guards-gw"), _config(server), None)
    yield gw
    gw.proc.stop()


def _metric(gw: Gateway, name: str, labels: set[str]) -> float:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    for line in text.splitlines():
        m = re.match(rf"{name}\{{(.*)\}} (\S+)$", line)
        if m and set(m.group(1).split(",")) == labels:
            return float(m.group(2))
    return 0.0


def _judge_requests(server: RunningServer) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('rewardfleet_model_server_requests_total{endpoint="/v1/chat/completions"')
    )


@pytest.mark.parametrize(
    ("answer", "guard"),
    [
        (":", "empty"),
        ("   ", "empty"),
        ("\u200b.\u200b", "empty"),
        ("Thought process:", "reasoning_opener"),
        ("Let's solve this problem step by step.", "reasoning_opener"),
        ("解", "reasoning_opener"),
    ],
)
def test_master_keys_score_0_without_a_judge_call(
    gateway: Gateway, server: RunningServer, answer: str, guard: str
) -> None:
    labels = {'reward_fn="judge"', f'guard="{guard}"'}
    before, calls = _metric(gateway, "rewardfleet_judge_guard_total", labels), _judge_requests(server)
    out = gateway.score(
        data_source="x", reward_fn="judge", solution_str=answer, ground_truth="4", extra_info=QUESTION
    ).json()
    assert out["status"] == "ok" and out["score"] == 0.0, out
    assert out["extra"]["guard"] == guard and out["extra"]["judge_verdict_source"] == "guard"
    assert _metric(gateway, "rewardfleet_judge_guard_total", labels) == before + 1
    assert _judge_requests(server) == calls


def test_a_real_answer_reaches_the_judge_with_the_same_extra_keys(
    gateway: Gateway, server: RunningServer
) -> None:
    calls = _judge_requests(server)
    common = {"data_source": "x", "reward_fn": "judge", "ground_truth": "4", "extra_info": QUESTION}
    judged = gateway.score(solution_str="2 + 2 = 4", **common).json()
    guarded = gateway.score(solution_str=":", **common).json()
    assert judged["status"] == "ok" and judged["extra"]["guard"] == ""
    assert _judge_requests(server) == calls + 1
    assert set(judged["extra"]) == set(guarded["extra"])  # verl needs one key set per batch


def test_rule_then_judge_never_pays_a_guarded_answer_more_than_a_flawed_one(gateway: Gateway) -> None:
    """A right boxed answer behind a 20 000-character padding passes the rule; the length guard scores it
    as flawed (rule score - flaw_penalty) without asking the judge."""
    padded = "x" * 20_000 + r" so the answer is \boxed{4}"
    out = gateway.score(
        data_source="x", reward_fn="rule_then_judge", solution_str=padded, ground_truth="4",
        extra_info=QUESTION,
    ).json()  # fmt: skip
    assert out["status"] == "ok", out
    extra = out["extra"]
    assert extra["guard"] == "too_long" and extra["rule_score"] == 1.0 and out["score"] == 0.0
    assert extra["judge_called"] is False
    labels = {'reward_fn="rule_then_judge"', 'guard="too_long"'}
    assert _metric(gateway, "rewardfleet_judge_guard_total", labels) == 1.0


def test_a_guard_label_a_function_invents_is_not_counted(gateway: Gateway) -> None:
    """Only the guards' own names become label values: the label stays bounded."""
    text = httpx.get(f"{gateway.url}/metrics", timeout=10).text
    guards = set(re.findall(r'rewardfleet_judge_guard_total\{[^}]*guard="([^"]+)"', text))
    assert guards <= {"empty", "reasoning_opener", "too_long"}


def test_a_misspelt_guard_setting_stops_startup(server: RunningServer, tmp_path: Path) -> None:
    config = _config(server, guards={"max_answer_char": 100})
    cfg = write_config(tmp_path / "gw.yaml", config)
    cmd = gateway_cmd("--port", str(free_port()), "--config", str(cfg))
    result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "guards.max_answer_char is not a guard setting" in result.stdout + result.stderr
