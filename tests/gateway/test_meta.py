"""Batch scoring, /reward_fns, /health, /ready, /metrics, /docs."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from rewardfleet.services.gateway.config import FunctionConfig
from rewardfleet.services.gateway.core.versioning import digest, function_version
from rewardfleet.services.gateway.execution.dropin import folder_digest
from tests.support.gateway import Gateway


def test_batch_keeps_order_and_runs_concurrently(gw: Gateway) -> None:
    samples = [
        {
            "data_source": "d",
            "reward_fn": "sleepy",
            "solution_str": "x",
            "extra_info": {"sleep_s": 0.4},
            "uid": 0,
        },
        {"data_source": "d", "reward_fn": "verl_sync", "solution_str": "1", "ground_truth": "2", "uid": 1},
        {
            "data_source": "d",
            "reward_fn": "sleepy",
            "solution_str": "x",
            "extra_info": {"sleep_s": 0.4},
            "uid": 2,
        },
        {"data_source": "test/exact", "solution_str": "x", "uid": 3},
        {"data_source": "d", "reward_fn": "raises", "solution_str": "x", "uid": 4},
        {
            "data_source": "d",
            "reward_fn": "returns_async",
            "solution_str": "x",
            "extra_info": {"kind": "float"},
            "uid": 5,
        },
    ]
    resp = httpx.post(f"{gw.url}/score/batch", json={"samples": samples}, timeout=30)
    assert resp.status_code == 200, resp.text
    results = resp.json()["results"]
    assert [r["uid"] for r in results] == [0, 1, 2, 3, 4, 5]
    assert [r["score"] for r in results] == [1.0, 0.0, 1.0, 0.1, None, 0.75]
    assert [r["status"] for r in results] == ["ok", "ok", "ok", "ok", "error", "ok"]
    # The two 0.4 s sleeps ran at the same time on the two workers: their intervals overlap.
    first, second = results[0]["extra"], results[2]["extra"]
    assert max(first["started"], second["started"]) < min(first["finished"], second["finished"])


def test_reward_fns_lists_functions(gw: Gateway, fake_router: str) -> None:
    resp = httpx.get(f"{gw.url}/reward_fns")
    assert resp.status_code == 200
    body = resp.json()
    fns = {f["name"]: f for f in body["reward_fns"]}
    assert {"gsm8k", "verl_sync", "verl_async", "raises_fallback", "claims_glob"} <= set(fns)
    assert "_helper" not in fns and "not_a_function" not in fns
    sync = fns["verl_sync"]
    assert (sync["kind"], sync["origin"], sync["injected_params"]) == ("sync", "user", [])
    source = gw.folder / "verl_sync.py"
    assert sync["source_file"] == str(source)
    # The version hashes the source and the config (issue 9): same file, other config -> other version;
    # for a drop-in folder's file also the folder's helpers (here _helper.py, not_a_function.py, ...).
    own = function_version(source, FunctionConfig())
    assert sync["version"] == digest(own.encode(), folder_digest(gw.folder).encode())
    assert fns["raises"]["version"] != fns["raises_fallback"]["version"]
    named = fns["inject_named"]
    assert named["kind"] == "async"
    assert named["injected_params"] == [
        "reward_router_address",
        "router_addresses",
        "http_client",
        "prompt",
        "uid",
    ]
    assert fns["inject_all"]["injected_params"] == [
        "reward_router_address",
        "reward_model_tokenizer",
        "router_addresses",
        "http_client",
        "prompt",
        "uid",
        "images",
        "messages",
    ]
    assert "http_client" not in fns["inject_sync"]["injected_params"]
    assert fns["claims_exact"]["data_sources"] == ["test/exact", "test/overridden"]
    assert fns["raises_fallback"]["origin"] == "config" and fns["raises_fallback"]["on_error_score"] == -1.0
    assert fns["hang"]["timeout_s"] == 1.0
    assert fns["gsm8k"]["origin"] == "builtin" and "openai/gsm8k" in fns["gsm8k"]["data_sources"]
    assert fns["math"]["origin"] == "user"  # the user file overrides the built-in
    assert body["dispatch"]["test/overridden"] == "verl_sync"
    assert body["dispatch"]["test/*"] == "claims_glob"
    assert body["default_reward_fn"] is None


def test_health_and_ready(gw: Gateway, fake_router: str) -> None:
    assert httpx.get(f"{gw.url}/health").json() == {"status": "ok"}
    ready = httpx.get(f"{gw.url}/ready")
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["ready"] is True and body["reward_fns"] >= 15
    assert body["routers"]["rm"] == {"address": fake_router, "reachable": True, "error": None}
    assert body["routers"]["judge"]["reachable"] is True


def test_openapi_docs(gw: Gateway) -> None:
    assert httpx.get(f"{gw.url}/docs").status_code == 200
    spec = httpx.get(f"{gw.url}/openapi.json").json()
    body_schema = spec["paths"]["/score"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    # solution_str is required unless the sample carries `messages` (checked by the model, not the schema)
    assert body_schema["required"] == ["data_source"]
    sample = spec["components"]["schemas"]["ScoreRequest"]["properties"]
    assert "Required unless `messages`" in sample["solution_str"]["description"] and "messages" in sample
    assert "/score/batch" in spec["paths"] and "/reward_fns" in spec["paths"]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_series_and_labels(gw: Gateway) -> None:
    before = _samples(httpx.get(f"{gw.url}/metrics").text)
    gw.score(data_source="test/exact", solution_str="x")  # claims_exact, ok
    gw.score(data_source="test/zzz", solution_str="x")  # claims_glob via the glob
    gw.score(data_source="unlisted", reward_fn="verl_sync", solution_str="x")  # label "other"
    gw.score(data_source="d", reward_fn="raises", solution_str="x")  # error
    gw.score(data_source="d", reward_fn="hang_async", solution_str="x")  # timeout
    httpx.post(f"{gw.url}/score", json={"data_source": 1})  # 422
    gw.score(data_source="nothing", solution_str="x")  # 404
    resp = httpx.get(f"{gw.url}/metrics")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    after = _samples(resp.text)

    def delta(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert delta("rewardfleet_gateway_requests_total", route="/score", status="200") == 5
    assert delta("rewardfleet_gateway_requests_total", route="/score", status="422") == 1
    assert delta("rewardfleet_gateway_requests_total", route="/score", status="404") == 1
    assert delta("rewardfleet_gateway_request_duration_seconds_count", route="/score") == 7
    assert delta("rewardfleet_reward_fn_outcomes_total", reward_fn="claims_exact", outcome="ok") == 1
    assert delta("rewardfleet_reward_fn_outcomes_total", reward_fn="raises", outcome="error") == 1
    assert delta("rewardfleet_reward_fn_outcomes_total", reward_fn="hang_async", outcome="timeout") == 1
    assert delta("rewardfleet_reward_fn_duration_seconds_count", reward_fn="hang_async") == 1
    assert delta("rewardfleet_reward_fn_duration_seconds_sum", reward_fn="hang_async") >= 0.45
    assert delta("rewardfleet_reward_score_count", reward_fn="claims_exact", data_source="test/exact") == 1
    assert delta("rewardfleet_reward_score_count", reward_fn="claims_glob", data_source="test/*") == 1
    assert delta("rewardfleet_reward_score_count", reward_fn="verl_sync", data_source="other") == 1
    # 0.1 lands in the le="0.1" bucket and not below it.
    assert (
        delta("rewardfleet_reward_score_bucket", reward_fn="claims_exact", data_source="test/exact", le="0.1")
        == 1
    )
    assert (
        delta("rewardfleet_reward_score_bucket", reward_fn="claims_exact", data_source="test/exact", le="0.0")
        == 0
    )
    # Errors and timeouts do not enter the score histogram.
    assert (
        "rewardfleet_reward_score_count",
        (("data_source", "other"), ("reward_fn", "raises")),
    ) not in after
    assert _value(after, "rewardfleet_gateway_inflight_requests") == 1.0  # this /metrics request
    assert ("rewardfleet_gateway_pool_queue_depth", ()) in after
    # Route labels are templates, never raw paths.
    routes = {dict(k[1]).get("route") for k in after if k[0] == "rewardfleet_gateway_requests_total"}
    assert "/score" in routes and not any(r and "nothing" in r for r in routes)
