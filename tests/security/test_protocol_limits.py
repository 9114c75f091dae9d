"""The trainer routes (issue 23): `/openrlhf` and `/slime` apply `/score/batch`'s limits (sample count, every
field, naming the trainer's field), and a non-finite `?error_score=` is a 422 naming it, not a 500. A real
gateway process on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway, start_gateway

FNS = Path(__file__).parent / "bounds_fns"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("protocol_limits")
    config = {
        "builtin_package": None,
        "workers": 1,
        "default_reward_fn": "echo",
        "max_batch_samples": 8,
        "max_solution_chars": 1000,
        "max_extra_info_chars": 1000,
        "max_uid_chars": 64,
        "max_data_source_chars": 64,
        "max_function_name_chars": 32,
    }
    gateway = start_gateway(tmp, config, FNS)
    yield gateway
    gateway.proc.stop()


def _openrlhf(n: int, **overrides: Any) -> dict[str, Any]:
    return {"query": ["Q: 2+2? A: 4"] * n, "prompts": ["Q: 2+2? A: "] * n, "labels": ["4"] * n, **overrides}


def test_openrlhf_applies_max_batch_samples(gw: Gateway) -> None:
    ok = httpx.post(f"{gw.url}/openrlhf", json=_openrlhf(8), timeout=30)
    assert ok.status_code == 200 and ok.json()["rewards"] == [1.0] * 8, ok.text[:300]
    resp = httpx.post(f"{gw.url}/openrlhf", json=_openrlhf(9), timeout=30)
    assert resp.status_code == 413, resp.text[:300]
    error = resp.json()["error"]
    assert error["type"] == "BatchTooLarge" and error["field"] == "query"
    assert "max_batch_samples" in error["message"]


# (route, body or query overrides, the trainer's field named in the answer)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/openrlhf", _openrlhf(2, query=["Q: 2+2? A: 4", "Q: 2+2? A: " + "4" * 1001]), "query"),
    ("/openrlhf", _openrlhf(1, labels=[{"ground_truth": "4", "extra_info": {"n": "x" * 1001}}]), "labels"),
    ("/openrlhf", _openrlhf(1, labels=[{"ground_truth": "4", "data_source": "d" * 65}]), "labels"),
    ("/openrlhf", _openrlhf(1, metas=[{"note": "x" * 1001}]), "labels"),
    ("/openrlhf?data_source=" + "d" * 65, _openrlhf(1), "data_source"),
    ("/openrlhf/" + "f" * 33, _openrlhf(1), "reward_fn"),
    ("/slime", {"response": "4" * 1001, "label": "4"}, "response"),
    ("/slime", {"response": "4", "label": "4", "uid": "u" * 65}, "uid"),
    ("/slime", {"response": "4", "label": "4", "metadata": {"n": "x" * 1001}}, "extra_info"),
    ("/slime", {"response": "4", "label": "4", "data_source": "d" * 65}, "data_source"),
    ("/slime", {"response": "4", "label": "4", "reward_fn": "f" * 33}, "reward_fn"),
    ("/slime/" + "f" * 33, {"response": "4", "label": "4"}, "reward_fn"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_trainer_fields_are_bounded_and_named(gw: Gateway, case: int) -> None:
    path, body, field = CASES[case]
    resp = httpx.post(gw.url + path, json=body, timeout=30)
    assert resp.status_code == 413, (path, field, resp.status_code, resp.text[:300])
    error = resp.json()["error"]
    assert error["type"] == "FieldTooLarge" and error["field"] == field, error


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "NaN"])
@pytest.mark.parametrize("route", ["/openrlhf/faulty", "/slime/faulty"])
def test_non_finite_error_score_is_422_naming_it(gw: Gateway, route: str, value: str) -> None:
    body = _openrlhf(1) if route.startswith("/openrlhf") else {"response": "4", "label": "4"}
    resp = httpx.post(f"{gw.url}{route}?error_score={value}", json=body, timeout=30)
    assert resp.status_code == 422, (route, value, resp.status_code, resp.text[:300])
    error = resp.json()["error"]
    assert error["fields"][0]["loc"] == ["query", "error_score"] and "error_score" in error["message"]
    finite = httpx.post(f"{gw.url}{route}?error_score=-1", json=body, timeout=30)
    assert finite.status_code == 200, finite.text[:300]
    score = finite.json()["rewards"][0] if route.startswith("/openrlhf") else finite.json()["score"]
    assert score == -1.0
