"""Unbounded request fields and results (issue 23): every client-supplied field of `/score`,
`/score/batch` and `/graders/*` has a bound answered 413/422 naming the field, and a function's oversize
result is a typed error for that sample, never a 200 carrying it, never cached. A real gateway process on
127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway, start_gateway

FNS = Path(__file__).parent / "bounds_fns"
LIMITS = {
    "max_solution_chars": 1000,
    "max_ground_truth_chars": 1000,
    "max_prompt_chars": 1000,
    "max_extra_info_chars": 1000,
    "max_extra_info_depth": 4,
    "max_json_depth": 4,
    "max_uid_chars": 64,
    "max_data_source_chars": 64,
    "max_group_id_chars": 64,
    "max_function_name_chars": 32,
    "max_grader_spec_chars": 1000,
    "max_result_extra_chars": 10_000,
}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("bounds")
    config = {
        "builtin_package": None,
        "workers": 1,
        "default_reward_fn": "echo",
        "graders": {"exact": {"type": "string_check", "operation": "eq"}},
        **LIMITS,
    }
    gateway = start_gateway(tmp, config, FNS)
    yield gateway
    gateway.proc.stop()


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


# field -> a sample with that field just over its bound (the other fields fine), and the status expected.
OVER: dict[str, tuple[dict[str, Any], int]] = {
    "uid": ({"uid": "u" * 65}, 413),
    "uid (integer)": ({"uid": 10**65}, 413),
    "data_source": ({"data_source": "d" * 65}, 413),
    "reward_fn": ({"reward_fn": "f" * 33}, 413),
    "group_id": ({"group_id": "g" * 65, "group_size": 2, "group_index": 0}, 413),
    "group_fn": ({"group_id": "g", "group_size": 2, "group_index": 0, "group_fn": "f" * 33}, 413),
    "solution_str": ({"solution_str": "s" * 1001}, 413),
    "ground_truth": ({"ground_truth": "t" * 1001}, 413),
    "ground_truth (object)": ({"ground_truth": {"answers": ["a"] * 600}}, 413),
    "ground_truth (depth)": ({"ground_truth": _nested(5)}, 422),
    "prompt": ({"prompt": "p" * 1001}, 413),
    "prompt (other keys)": ({"prompt": [{"role": "user", "content": "q", "name": "n" * 1001}]}, 413),
    "prompt (depth)": ({"prompt": [{"role": "user", "content": [_nested(4)]}]}, 422),
    "extra_info": ({"extra_info": {"note": "e" * 1001}}, 413),
    "extra_info (many keys)": ({"extra_info": {f"k{i}": 0 for i in range(400)}}, 413),
    "extra_info (depth)": ({"extra_info": _nested(5)}, 422),
}


@pytest.mark.parametrize("case", list(OVER))
def test_every_score_field_is_bounded_and_named(gw: Gateway, case: str) -> None:
    over, status = OVER[case]
    field = case.split(" ")[0]
    body = {"data_source": "x", "solution_str": "a", **over}
    resp = httpx.post(f"{gw.url}/score", json=body, timeout=30)
    assert resp.status_code == status, (case, resp.status_code, resp.text[:300])
    error = resp.json()["error"]
    assert error["field"] == field and field in error["message"], error
    assert error["type"] == ("FieldTooLarge" if status == 413 else "TooDeep")
    batch = {"samples": [{"data_source": "x", "solution_str": "a"}, body]}
    resp = httpx.post(f"{gw.url}/score/batch", json=batch, timeout=30)
    assert resp.status_code == status and resp.json()["error"]["field"] == field
    assert "samples[1]" in resp.json()["error"]["message"]


def test_fields_at_their_bounds_are_accepted(gw: Gateway) -> None:
    body = {
        "data_source": "d" * 64,
        "solution_str": "s" * 1000,
        "uid": "u" * 64,
        "ground_truth": "t" * 1000,
        "prompt": "p" * 1000,
        "extra_info": _nested(4),
        "reward_fn": "echo",
    }
    resp = httpx.post(f"{gw.url}/score", json=body, timeout=30)
    assert resp.status_code == 200, resp.text[:300]
    assert resp.json()["status"] == "ok" and resp.json()["uid"] == "u" * 64


def test_grader_routes_bound_the_spec_and_the_sample(gw: Gateway) -> None:
    sample = {"data_source": "x", "solution_str": "a", "ground_truth": "a"}
    ok = httpx.post(f"{gw.url}/graders/run", json={"grader": "exact", "sample": sample}, timeout=30)
    assert ok.status_code == 200 and ok.json()["score"] == 1.0, ok.text
    big_info = {**sample, "extra_info": {"x": "e" * 999}}
    cases = [
        ("/graders/validate", {"grader": "n" * 33}, "grader"),
        ("/graders/validate", {"grader": {"type": "string_check", "reference": "r" * 1001}}, "grader"),
        ("/graders/run", {"grader": "exact", "sample": {**sample, "uid": "u" * 65}}, "uid"),
        ("/graders/run", {"grader": "exact", "sample": big_info}, "extra_info"),
    ]
    for path, body, field in cases:
        resp = httpx.post(gw.url + path, json=body, timeout=30)
        assert resp.status_code == 413, (path, field, resp.text[:300])
        assert resp.json()["error"]["field"] == field


@pytest.mark.parametrize("fn", ["big_extra", "big_extra_async"])
def test_an_oversize_result_is_a_typed_error_never_sent_or_cached(gw: Gateway, fn: str) -> None:
    body = {"data_source": "x", "solution_str": "a", "reward_fn": fn, "uid": f"big-{fn}"}
    small = httpx.post(f"{gw.url}/score", json={**body, "extra_info": {"blob_chars": 100}}, timeout=30)
    assert small.json()["status"] == "ok" and len(small.json()["extra"]["blob"]) > 0
    big_info = {"blob_chars": 200_000, "pieces": 20_000}
    for attempt in range(2):  # never cached: the second post is computed (and refused) again
        resp = httpx.post(f"{gw.url}/score", json={**body, "extra_info": big_info}, timeout=30)
        assert resp.status_code == 200
        result = resp.json()
        assert result["status"] == "error" and result["score"] is None, result
        assert result["error"]["type"] == "ResultTooLarge" and result["extra"] == {}
        assert "max_result_extra_chars" in result["error"]["message"]
        assert result["cached"] is False, attempt
        assert len(resp.content) < 5_000
    assert "ResultTooLarge" in gw.proc.log()  # the failure is logged
