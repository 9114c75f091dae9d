"""Issue 9 through the stand-in judge and encoder pools behind real sglang-routers: `score_model` and cosine
graders, and the judge fallback when the judge pool answers 503 (circuit open / no worker) or too slowly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway, start_gateway
from tests.support.remote_fleet import Fleet

FILES = Path(__file__).parent.parent / "gateway" / "advanced_files"


@pytest.fixture(scope="module")
def gw(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("adv_e2e")
    config = {
        "workers": 1,
        "routers": fleet.router_addresses,
        "functions": {"judge": {"timeout_s": 2.0}},
        "fallbacks": {"judge": {"fn": "exact"}},
        "graders": {
            "judged": {
                "type": "score_model",
                "range": [0, 10],
                "pool": "judge",
                "input": "{{ sample.output_text }}",
            },
            "cos": {"type": "text_similarity", "evaluation_metric": "cosine", "pool": "encoder"},
            "blend": {
                "type": "multi",
                "graders": {"j": "judged", "c": "cos"},
                "calculate_output": "j / 10 * 0.5 + c * 0.5",
            },
        },
    }
    gateway = start_gateway(tmp, config, FILES)
    try:
        yield gateway
    finally:
        gateway.proc.stop()


def _score(gw: Gateway, **body: Any) -> dict[str, Any]:
    body = {"data_source": "e2e", "prompt": "What is 3 + 4?", **body}
    resp = gw.score(**body)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def test_score_model_grader_maps_the_judge_verdict_onto_its_range(gw: Gateway, fleet: Fleet) -> None:
    before = fleet.judge.served().get("/v1/chat/completions", 0)
    result = _score(gw, solution_str="7", ground_truth="7", reward_fn="judged")
    assert result["status"] == "ok", result
    assert result["score"] == pytest.approx(10.0)  # canned "Verdict: correct" -> 1.0 -> top of [0, 10]
    assert result["extra"]["judge_verdict"]
    assert fleet.judge.served().get("/v1/chat/completions", 0) == before + 1


def test_cosine_grader_and_multi_through_the_encoder_pool(gw: Gateway, fleet: Fleet) -> None:
    same = _score(gw, solution_str="the same words", ground_truth="the same words", reward_fn="cos")
    other = _score(gw, solution_str="the same words", ground_truth="entirely unrelated text", reward_fn="cos")
    assert same["status"] == other["status"] == "ok"
    assert same["score"] == pytest.approx(1.0) and other["score"] < same["score"]
    blend = _score(gw, solution_str="the same words", ground_truth="the same words", reward_fn="blend")
    assert blend["score"] == pytest.approx(1.0) and blend["extra"]["graders"]["j"] == pytest.approx(10.0)
    run = httpx.post(
        f"{gw.url}/graders/run",
        json={"grader": "cos", "sample": {"data_source": "d", "solution_str": "a b", "ground_truth": "a b"}},
        timeout=30,
    ).json()
    assert run["status"] == "ok" and run["score"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("control", "reason"),
    [({"fail_rate": 1.0, "fail_status": 503}, "circuit_open"), ({"delay_ms": 4000}, "timeout")],
)
def test_judge_fallback_through_a_real_router(
    gw: Gateway, fleet: Fleet, control: dict[str, Any], reason: str
) -> None:
    healthy = _score(gw, solution_str="7", ground_truth="7", reward_fn="judge")
    assert healthy["status"] == "ok" and "fallback" not in healthy["extra"]
    fleet.judge.control(**control)
    try:
        result = _score(gw, solution_str="7", ground_truth="7", reward_fn="judge")
    finally:
        fleet.judge.control(fail_rate=0.0, delay_ms=0)
    assert result["status"] == "ok", result
    assert result["score"] == 1.0  # the rule check
    assert result["extra"]["fallback"]["reason"] == reason
    assert result["extra"]["fallback"]["from"] == "judge" and result["extra"]["fallback"]["fn"] == "exact"
