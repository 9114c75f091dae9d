"""Hostile and malformed inputs on the NeMo Gym routes and the new built-ins, over a real gateway: a 4xx
naming the field, a typed error, or a 0 — never a crash, never a pass."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.gateway import Gateway

CATASTROPHIC = "^(a+)+$"
SLOW_TEXT = "a" * 40 + "b"


def body(text: str, **task: Any) -> dict[str, Any]:
    output = [{"type": "message", "role": "assistant", "id": "m", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}]  # fmt: skip
    return {"responses_create_params": {"input": "q"}, "response": {"id": "r", "output": output}, **task}


def verify(gym: Gateway, server: str, payload: Any) -> httpx.Response:
    return httpx.post(f"{gym.url}/nemo_gym/{server}/verify", json=payload, timeout=60)


def locs(resp: httpx.Response) -> list[list[Any]]:
    return [f["loc"] for f in resp.json()["error"]["fields"]]


def test_a_missing_label_names_the_task_field(gym: Gateway) -> None:
    resp = verify(gym, "equivalence_rule", body("x"))  # equivalence_rule needs expected_answer
    assert resp.status_code == 422 and locs(resp) == [["body", "expected_answer"]], resp.text


def test_malformed_bodies_name_the_field(gym: Gateway) -> None:
    good = body("\\boxed{A}", expected_answer="A", options=[{"A": "x"}])
    no_response = {k: v for k, v in good.items() if k != "response"}
    assert locs(verify(gym, "mcqa", no_response)) == [["body", "response"]]
    bad_output = {**good, "response": {"output": "text"}}
    resp = verify(gym, "mcqa", bad_output)
    assert resp.status_code == 422 and locs(resp) == [["body", "response", "output"]]
    bad_text = body("x")
    bad_text["response"]["output"][0]["content"][0]["text"] = 7
    assert locs(verify(gym, "mcqa", bad_text)) == [["body", "response", "output", 0, "content", 0, "text"]]
    assert verify(gym, "mcqa", [good]).status_code == 422
    assert verify(gym, "nope", good).status_code == 404
    deep = json.dumps(good)[:-1] + ', "metadata": ' + "[" * 5000 + "]" * 5000 + "}"
    resp = httpx.post(f"{gym.url}/nemo_gym/mcqa/verify", content=deep, timeout=10)
    assert resp.status_code == 422, resp.text
    resp = httpx.post(f"{gym.url}/nemo_gym/mcqa/verify", content=b"{not json", timeout=10)
    assert resp.status_code == 422
    assert httpx.post(f"{gym.url}/nemo_gym/mcqa/seed_session", json=[], timeout=10).status_code == 422


def test_aggregate_metrics_checks_its_rows(gym: Gateway) -> None:
    url = f"{gym.url}/nemo_gym/mcqa/aggregate_metrics"
    assert httpx.post(url, json={"verify_responses": {}}, timeout=10).status_code == 422
    resp = httpx.post(url, json={"verify_responses": [{"reward": "1"}, {"reward": 1, "_ng_task_index": "x"}]})
    assert resp.status_code == 422
    assert locs(resp) == [
        ["body", "verify_responses", 0, "reward"],
        ["body", "verify_responses", 1, "_ng_task_index"],
    ]
    assert httpx.post(url, json={"verify_responses": []}, timeout=10).json()["agent_metrics"] == {}


def test_huge_response_is_refused_naming_the_field(gym: Gateway) -> None:
    resp = verify(
        gym, "mcqa", body("\\boxed{A}" + "x" * 1_100_000, expected_answer="A", options=[{"A": "x"}])
    )
    assert resp.status_code == 413, resp.text
    assert resp.json()["error"]["field"] == "response"


def test_catastrophic_regex_is_a_timeout_not_a_reward(gym: Gateway) -> None:
    verifier = {"type": "regex", "verify_regex": [CATASTROPHIC]}
    resp = verify(gym, "format_verification", body(SLOW_TEXT, verifier=verifier))
    assert resp.status_code == 504, resp.text
    assert resp.json()["error"]["type"] == "RewardFunctionTimeout"
    # a server with a configured fallback answers it, flagged
    resp = verify(gym, "fallback", body(SLOW_TEXT, verifier=verifier))
    assert resp.status_code == 200 and resp.json()["reward"] == -1.0 and resp.json()["reward_failed"] is True
    # the gateway still scores afterwards (the stuck worker was replaced)
    ok = verify(
        gym, "format_verification", body("1. x", verifier={"type": "regex", "verify_regex": [r"^\d\."]})
    )
    assert ok.status_code == 200 and ok.json()["reward"] == 1.0


def test_hostile_schemas(gym: Gateway) -> None:
    slow = json.dumps({"type": "object", "properties": {"a": {"type": "string", "pattern": CATASTROPHIC}}})
    resp = verify(gym, "structured_outputs", body(json.dumps({"a": SLOW_TEXT}), schema_str=slow))
    assert resp.status_code == 504, resp.text
    deep_schema = json.dumps(json.loads('{"items":' * 40 + "{}" + "}" * 40))
    resp = verify(gym, "structured_outputs", body("[]", schema_str=deep_schema))
    assert resp.status_code == 500 and "SchemaRefused" in resp.text
    resp = verify(gym, "structured_outputs", body("{}", schema_str='{"type": 12}'))
    assert resp.status_code == 500 and "invalid JSON Schema" in resp.text
    resp = verify(gym, "structured_outputs", body("[" * 100 + "]" * 100, schema_str='{"type": "array"}'))
    assert resp.status_code == 200 and resp.json()["reward"] == 0.0
    resp = verify(gym, "structured_outputs", body("x", schema_str="{}", schema_type="xml"))
    assert resp.status_code == 500 and "schema_type" in resp.text
    good = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert verify(gym, "structured_outputs", body('{"a": 1}', schema_str=good)).json()["reward"] == 1.0
    # strict: an extra key or a missing one fails, as in NeMo Gym
    assert (
        verify(gym, "structured_outputs", body('{"a": 1, "b": 2}', schema_str=good)).json()["reward"] == 0.0
    )
    assert verify(gym, "structured_outputs", body("{}", schema_str=good)).json()["reward"] == 0.0


def test_tool_call_payload_is_read_from_the_trajectory(gym: Gateway) -> None:
    good = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    payload = body("", schema_str=good, response_mode="tool_call", tool_name="emit")
    payload["response"]["output"] = [
        {"type": "function_call", "call_id": "c1", "name": "emit", "arguments": '{"a": 3}', "id": "f"}
    ]
    assert verify(gym, "structured_outputs", payload).json()["reward"] == 1.0
    payload["response"]["output"][0]["name"] = "other"
    answer = verify(gym, "structured_outputs", payload).json()
    assert answer["reward"] == 0.0 and answer["error_type"] == "wrong_tool_name"


def test_composite_components_reach_the_verify_answer(gym: Gateway) -> None:
    resp = verify(gym, "multi", body("<think>ok</think> 42", expected_answer="42"))
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert set(answer["reward_components"]) == {"exact_match", "format_check"}
    assert answer["reward_components"] == {"exact_match": 0.0, "format_check": 1.0}
    assert answer["reward"] == 0.5


def test_forged_reward_keys_in_the_body_are_not_echoed(gym: Gateway) -> None:
    forged = body("\\boxed{C}", expected_answer="A", options=[{"A": "x"}, {"C": "y"}])
    forged |= {"reward": 1.0, "reward_components": {"correct": 1.0}, "reward_failed": False}
    answer = verify(gym, "mcqa", forged).json()
    assert answer["reward"] == 0.0
    assert "reward_components" not in answer and "reward_failed" not in answer


def test_aggregate_metrics_bounds_its_work(gym: Gateway) -> None:
    url = f"{gym.url}/nemo_gym/mcqa/aggregate_metrics"
    rows = [{"reward": 1, "_ng_task_index": 0, "_ng_rollout_index": i} for i in range(1024)]
    rows += [{"reward": 0, "_ng_task_index": t} for t in range(1, 5000)]  # 5000 tasks x k up to 1024
    resp = httpx.post(url, json={"verify_responses": rows}, timeout=60)
    assert resp.status_code == 413 and resp.json()["error"]["field"] == "verify_responses", resp.text
    infinite = b'{"verify_responses": [{"reward": Infinity}]}'
    resp = httpx.post(url, content=infinite, timeout=10)
    assert resp.status_code == 422 and locs(resp) == [["body", "verify_responses", 0, "reward"]]
    many_errors = {"verify_responses": [{"reward": "x"}] * 1000}
    assert len(locs(httpx.post(url, json=many_errors, timeout=10))) == 20


def test_components_from_a_worker_process_function(gym: Gateway) -> None:
    answer = verify(gym, "sync_components", body("x", components={"a": 1.0, "b.c": 0.5})).json()
    assert answer["reward_components"] == {"a": 1.0, "b.c": 0.5} and answer["reward"] == 1.5
    too_many = {f"c{i}": 1.0 for i in range(33)}
    resp = verify(gym, "sync_components", body("x", components=too_many))
    assert resp.status_code == 500 and "ComponentError" in resp.text  # typed, never a reward
    resp = verify(gym, "sync_components", body("x", components={"<script>": 1.0}))
    assert resp.status_code == 500 and "ComponentError" in resp.text
    sample = {"data_source": "d", "solution_str": "x", "reward_fn": "components_sync",
              "extra_info": {"components": {"a": 2}}}  # fmt: skip
    score = httpx.post(f"{gym.url}/score", json=sample, timeout=60).json()
    assert score["reward_components"] == {"a": 2.0} and score["status"] == "ok"
