"""Shadow judge (monitors/shadow.py) through a real gateway process and SGLang stand-in judges.

The primary judge's verdict is chosen per sample (`<standin-reply>` in the question): half correct, half
incorrect. One shadow sees the same prompt and always agrees (kappa 1). The other is a lazy reference whose
template leaves the question out, so it answers its canned "Verdict: correct" to everything: it disagrees on
half the samples and carries no information beyond chance (kappa 0), and the primary scores 0.5 lower on
average (drift -0.5). A third reference pool answers only after a delay: the sample's answer comes back while
its shadow call is still in flight, and a second sample beyond `max_inflight` is dropped, not queued.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.harness.processes import free_port, running
from bench.harness.waiting import eventually
from rewardfleet.services.gateway.monitors.shadow import agreement_stats
from tests.support.gateway import Gateway, start_gateway

N = 40
JUDGE = "rewardfleet.reward_fns.judge:compute_score"
NO_QUESTION = "[Reference answer]\n{reference}\n\n[Response]\n{response}\n\nIs the response correct?"


def test_kappa_and_agreement_maths() -> None:
    assert agreement_stats([(1, 1), (0, 0), (1, 1), (0, 0)], 0.5) == (1.0, 1.0, 0.0)
    agreement, kappa, drift = agreement_stats([(1, 1), (0, 1), (1, 1), (0, 1)], 0.5)
    assert (agreement, kappa, drift) == (0.5, 0.0, -0.5)
    # 3 of 4 agree, each judge accepts half: p_e = 0.5, kappa = (0.75 - 0.5) / 0.5
    assert agreement_stats([(1, 1), (0, 0), (1, 1), (0, 1)], 0.5)[:2] == (0.75, 0.5)
    assert agreement_stats([(1, 0), (0, 1)], 0.5)[1] == -1.0  # always opposite


@pytest.fixture(scope="module")
def judges(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("shadow-judges")
    ports = {"fast": free_port(), "slow": free_port()}

    def cmd(port: int, *more: str) -> list[str]:
        return [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", "judge",
                "--canned-text", "Verdict: correct", "--health-delay-s", "0", *more]  # fmt: skip

    with (
        running(cmd(ports["fast"]), tmp / "fast.log") as fast,
        running(cmd(ports["slow"], "--delay-ms", "4000"), tmp / "slow.log") as slow,
    ):
        fast.wait_http(f"http://127.0.0.1:{ports['fast']}/health", timeout_s=60)
        slow.wait_http(f"http://127.0.0.1:{ports['slow']}/health", timeout_s=60)
        yield {name: f"127.0.0.1:{port}" for name, port in ports.items()}


@pytest.fixture(scope="module")
def gateway(judges: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("shadow-gw")
    kwargs = {"pool": "judge", "generation": {"max_tokens": 32}, "timeout_s": 30}
    shadow = {"pool": "reference", "sample_rate": 1.0, "window": N}
    config = {
        "workers": 1, "result_cache_size": 0,
        "routers": {"judge": judges["fast"], "reference": judges["fast"], "slow_reference": judges["slow"]},
        "functions": {
            "agrees": {"path": JUDGE, "reward_kwargs": kwargs, "shadow": shadow},
            "lazy": {"path": JUDGE, "reward_kwargs": kwargs,
                     "shadow": {**shadow, "reward_kwargs": {"verdict": {"user_template": NO_QUESTION}}}},
            "slow": {"path": JUDGE, "reward_kwargs": kwargs,
                     "shadow": {"pool": "slow_reference", "sample_rate": 1.0, "max_inflight": 1}},
        },
    }  # fmt: skip
    gw = start_gateway(tmp, config, None)
    yield gw
    gw.proc.stop()


def shadow(gw: Gateway) -> dict[str, Any]:
    result: dict[str, Any] = httpx.get(f"{gw.url}/monitors", timeout=10).json()["shadow"]
    return result


def sample(fn: str, i: int) -> dict[str, Any]:
    verdict = "Verdict: correct" if i % 2 == 0 else "Verdict: incorrect"
    return {
        "data_source": "x",
        "reward_fn": fn,
        "solution_str": f"answer {i}",
        "ground_truth": "42",
        "uid": f"{fn}-{i}",
        "extra_info": {"question": f"Q{i}? <standin-reply>{verdict}</standin-reply>"},
    }


def test_agreeing_and_lazy_shadows(gateway: Gateway) -> None:
    for fn in ("agrees", "lazy"):
        for i in range(N):
            out = httpx.post(f"{gateway.url}/score", json=sample(fn, i), timeout=30).json()
            assert out["status"] == "ok" and out["score"] == (1.0 if i % 2 == 0 else 0.0), out
    report = eventually(
        lambda: (s := shadow(gateway))["agrees"]["pairs"] == N and s["lazy"]["pairs"] == N and s,
        timeout_s=60,
        interval_s=0.1,
        what="pairs",
        retry_on=(),
    )
    assert report["agrees"] == {
        "pool": "reference",
        "pairs": N,
        "agreement": 1.0,
        "kappa": 1.0,
        "score_drift": 0.0,
        "inflight": 0,
        "calls": {"ok": N, "error": 0, "dropped": 0},
    }
    lazy = report["lazy"]
    assert (lazy["agreement"], lazy["kappa"], lazy["score_drift"]) == (0.5, 0.0, -0.5)
    metrics = httpx.get(f"{gateway.url}/metrics", timeout=10).text
    assert 'rewardfleet_shadow_kappa{pool="reference",reward_fn="lazy"} 0.0' in metrics
    assert 'rewardfleet_shadow_kappa{pool="reference",reward_fn="agrees"} 1.0' in metrics
    assert 'rewardfleet_shadow_score_drift{pool="reference",reward_fn="lazy"} -0.5' in metrics
    # the shadow calls are not the function's own calls: score metrics count the N answers only
    assert 'rewardfleet_reward_fn_outcomes_total{outcome="ok",reward_fn="lazy"} 40.0' in metrics


def test_the_answer_does_not_wait_for_its_shadow(gateway: Gateway) -> None:
    first = httpx.post(f"{gateway.url}/score", json=sample("slow", 0), timeout=30).json()
    assert first["status"] == "ok"
    # answered, while its shadow (4 s on the slow reference) is still running
    state = shadow(gateway)["slow"]
    assert state["inflight"] == 1 and state["pairs"] == 0
    second = httpx.post(f"{gateway.url}/score", json=sample("slow", 1), timeout=30).json()
    assert second["status"] == "ok"
    assert shadow(gateway)["slow"]["calls"]["dropped"] == 1  # max_inflight 1: skipped, not queued
    done = eventually(
        lambda: (s := shadow(gateway)["slow"])["pairs"] == 1 and s,
        timeout_s=60,
        interval_s=0.1,
        what="the slow shadow",
        retry_on=(),
    )
    assert done["inflight"] == 0 and done["calls"] == {"ok": 1, "error": 0, "dropped": 1}
