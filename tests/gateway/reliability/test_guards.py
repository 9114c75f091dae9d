"""API keys on every non-exempt route, input limits naming the field, and idempotency (dedupe + cache)."""

from __future__ import annotations

import collections
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from rewardfleet.services.client import RewardClient, Unauthorized

KEYS = ("k-first-3f9a0c1e2d", "k-second-77c1b4a9e0")


@pytest.fixture
def guarded(gateway_factory: Any, tmp_path: Path) -> Any:
    log = tmp_path / "calls.log"
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"# gateway keys\n{KEYS[1]}\n")
    config = {
        "default_reward_fn": "counted",
        "api_keys_file": str(keys_file),
        "max_solution_chars": 1000,
        "max_ground_truth_chars": 100,
        "max_prompt_chars": 200,
        "max_extra_info_depth": 4,
        "max_batch_samples": 5,
        "functions": {"counted": {"reward_kwargs": {"log_path": str(log), "delay_s": 0.3}}},
    }
    gw = gateway_factory(config, env={"REWARDFLEET_GATEWAY_API_KEYS": KEYS[0]})
    gw.calls = lambda: collections.Counter(log.read_text().split()) if log.exists() else collections.Counter()
    return gw


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_every_route_but_health_refuses_a_missing_or_wrong_key(guarded: Any) -> None:
    spec = httpx.get(f"{guarded.url}/openapi.json", headers=_auth(KEYS[0]), timeout=10).json()
    routes = [(m.upper(), p) for p, ops in spec["paths"].items() for m in ops]
    routes += [("GET", "/openapi.json"), ("GET", "/docs")]
    assert ("POST", "/score") in routes and ("GET", "/metrics") in routes
    checked = 0
    for method, path in routes:
        url = guarded.url + path.replace("{reward_fn}", "counted").replace("{name}", "counted")
        for headers in ({}, _auth("wrong"), {"Authorization": KEYS[0]}, _auth(KEYS[0] + "x")):
            resp = httpx.request(method, url, headers=headers, json={}, timeout=10)
            if path == "/health":
                assert resp.status_code == 200
                continue
            assert resp.status_code == 401, (method, path, headers, resp.status_code)
            assert resp.json()["error"]["type"] == "Unauthorized"
            assert resp.headers["www-authenticate"].startswith("Bearer")
            checked += 1
    for key in KEYS:  # both sources of keys work
        assert httpx.get(f"{guarded.url}/reward_fns", headers=_auth(key), timeout=10).status_code == 200
    with RewardClient(guarded.url, api_key=KEYS[0]) as client:
        assert client.score(data_source="x", solution_str="abc").ok
    with RewardClient(guarded.url, api_key="wrong") as client, pytest.raises(Unauthorized):
        client.score(data_source="x", solution_str="abc")
    guarded.stop()
    logs = guarded.logs()
    assert not any(key in logs for key in KEYS), "an API key reached the log"
    print(f"\nAUTH routes={len(routes)} refusals_checked={checked}")


def test_limits_name_the_field(guarded: Any) -> None:
    def post(**body: Any) -> httpx.Response:
        body = {"data_source": "x", "solution_str": "a", **body}
        return httpx.post(f"{guarded.url}/score", json=body, headers=_auth(KEYS[0]), timeout=10)

    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5):
        node["d"] = {}
        node = node["d"]
    cases = {
        "solution_str": (post(solution_str="x" * 1001), 413),
        "ground_truth": (post(ground_truth="x" * 101), 413),
        "prompt": (post(prompt=[{"role": "user", "content": "x" * 201}]), 413),
        "extra_info": (post(extra_info=deep), 422),
    }
    for field, (resp, status) in cases.items():
        assert resp.status_code == status, (field, resp.text)
        error = resp.json()["error"]
        assert error["field"] == field and field in error["message"]
    batch = {"samples": [{"data_source": "x", "solution_str": "a"}] * 6}
    resp = httpx.post(f"{guarded.url}/score/batch", json=batch, headers=_auth(KEYS[0]), timeout=10)
    assert resp.status_code == 413 and resp.json()["error"]["type"] == "BatchTooLarge"
    assert post(extra_info={"a": {"b": {"c": 1}}}).status_code == 200  # depth 3 is fine


def test_duplicates_run_once_and_answers_say_cached(guarded: Any) -> None:
    def post(uid: str, solution: str = "abc") -> dict[str, Any]:
        body = {"data_source": "x", "solution_str": solution, "uid": uid}
        resp = httpx.post(f"{guarded.url}/score", json=body, headers=_auth(KEYS[0]), timeout=30)
        return resp.json()

    with ThreadPoolExecutor(8) as pool:  # eight copies at once: one call, seven join it
        answers = list(pool.map(post, ["same"] * 8))
    assert [a["score"] for a in answers] == [3.0] * 8
    assert sum(a["cached"] for a in answers) == 7
    again = post("same")
    assert again["cached"] is True and again["uid"] == "same"
    other = post("same", solution="abcd")  # verl's uid names a prompt: another response is another sample
    assert other["cached"] is False and other["score"] == 4.0
    assert guarded.calls() == {"same": 2}
    # The answers without a call of their own reach /metrics: 7 joins or hits at once, then one hit.
    metrics = httpx.get(f"{guarded.url}/metrics", headers=_auth(KEYS[0]), timeout=30).text
    counted = {
        how: _sample(metrics, f'rewardfleet_gateway_result_cache_answers_total{{how="{how}"}}')
        for how in ("hit", "join")
    }
    assert counted["hit"] + counted["join"] == 8 and counted["hit"] >= 1, counted


def _sample(exposition: str, name: str) -> float:
    for line in exposition.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} is not in /metrics")
