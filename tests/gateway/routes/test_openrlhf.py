"""`routes/openrlhf.py`: OpenRLHF's payload mapping, uids, query split flags and failure policy, pinned
exactly against a scripted scorer."""

from __future__ import annotations

import httpx

from rewardfleet.services.gateway.routes.trainer_protocol import TrainerBackend, content_uid
from tests.gateway.routes.trainer_scorer import IM_PROMPT, Scorer, openrlhf_payload, trainer_app


async def test_openrlhf_single_sample(http: httpx.AsyncClient, scorer: Scorer) -> None:
    resp = await http.post("/openrlhf", json=openrlhf_payload("4"))
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "rewards": [1.0],
        "scores": [1.0],
        "extra_logs": {"reward_failed": [0.0], "query_split_failed": [0.0], "acc": [1.0], "n": [3.0]},
    }
    (body,) = scorer.bodies
    assert body["solution_str"] == "4<|im_end|>" and body["prompt"] == IM_PROMPT
    assert body["ground_truth"] == "4" and body["data_source"] == "openrlhf" and "reward_fn" not in body


async def test_openrlhf_uids_are_stable_digests_of_the_samples(
    http: httpx.AsyncClient, scorer: Scorer
) -> None:
    """A retried request carries the same uids (so the gateway's idempotency cache answers it); different
    samples get different uids; equal samples share one."""
    payload = openrlhf_payload("4", "5", "4")
    await http.post("/openrlhf", json=payload)
    await http.post("/openrlhf", json=payload)
    first, retry = [b["uid"] for b in scorer.bodies[:3]], [b["uid"] for b in scorer.bodies[3:]]
    assert first == retry
    assert first[0] == first[2] != first[1]
    body = {k: v for k, v in scorer.bodies[0].items() if k != "uid"}
    assert first[0] == content_uid(body)
    other_label = openrlhf_payload("4", labels=["5"])
    await http.post("/openrlhf", json=other_label)
    assert scorer.bodies[-1]["uid"] != first[0]


async def test_openrlhf_several_samples_keep_order(http: httpx.AsyncClient) -> None:
    resp = await http.post("/openrlhf", json=openrlhf_payload("4", "5", "4", labels=["4", "4", "5"]))
    assert resp.json()["rewards"] == [1.0, 0.0, 0.0]
    assert resp.json()["extra_logs"]["acc"] == [1.0, 0.0, 0.0]


async def test_openrlhf_empty_lists(http: httpx.AsyncClient, scorer: Scorer) -> None:
    resp = await http.post("/openrlhf", json={"query": [], "prompts": [], "labels": []})
    assert resp.status_code == 200
    assert resp.json() == {
        "rewards": [],
        "scores": [],
        "extra_logs": {"reward_failed": [], "query_split_failed": []},
    }
    assert scorer.bodies == []


async def test_openrlhf_route_and_query_choose_function_and_data_source(
    http: httpx.AsyncClient, scorer: Scorer
) -> None:
    await http.post("/openrlhf/gsm8k?data_source=openai/gsm8k", json=openrlhf_payload("4"))
    labels = [{"ground_truth": "4", "data_source": "math_dapo", "extra_info": {"split": "train"}}]
    resp = await http.post("/openrlhf", json=openrlhf_payload("4", labels=labels) | {"metas": [{"id": 7}]})
    assert resp.json()["rewards"] == [1.0]
    named, unpacked = scorer.bodies
    assert named["reward_fn"] == "gsm8k" and named["data_source"] == "openai/gsm8k"
    assert unpacked["data_source"] == "math_dapo" and unpacked["ground_truth"] == "4"
    assert unpacked["extra_info"] == {"id": 7, "split": "train"}


async def test_openrlhf_misaligned_lists_are_422(http: httpx.AsyncClient) -> None:
    resp = await http.post("/openrlhf", json={"query": ["a", "b"], "prompts": ["a"], "labels": ["1", "2"]})
    assert resp.status_code == 422
    assert "prompts has 1 items" in resp.text


async def test_openrlhf_failure_without_fallback_is_500_with_the_samples(http: httpx.AsyncClient) -> None:
    resp = await http.post("/openrlhf", json=openrlhf_payload("4", "boom"))
    assert resp.status_code == 500
    error = resp.json()["error"]
    assert error["type"] == "RewardFunctionFailed" and "ValueError: boom" in error["message"]
    assert [s["index"] for s in error["samples"]] == [1]
    resp = await http.post("/openrlhf", json=openrlhf_payload("slow"))
    assert resp.status_code == 504 and resp.json()["error"]["type"] == "RewardFunctionTimeout"


async def test_openrlhf_error_score_and_gateway_fallback_are_flagged(http: httpx.AsyncClient) -> None:
    resp = await http.post("/openrlhf?error_score=-0.5", json=openrlhf_payload("4", "boom", "fallback"))
    assert resp.status_code == 200
    data = resp.json()
    assert data["rewards"] == [1.0, -0.5, -1.0]
    assert data["extra_logs"]["reward_failed"] == [0.0, 1.0, 1.0]
    assert "acc" not in data["extra_logs"]  # not present on every sample
    resp = await http.post("/openrlhf", json=openrlhf_payload("fallback"))
    assert resp.status_code == 200 and resp.json()["rewards"] == [-1.0]


async def test_router_default_error_score() -> None:
    app = trainer_app(TrainerBackend(score_one=Scorer(), error_score=0.25))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as http:
        resp = await http.post("/openrlhf", json=openrlhf_payload("boom"))
    assert resp.json()["rewards"] == [0.25]


async def test_openrlhf_unsplittable_query_is_flagged(http: httpx.AsyncClient, scorer: Scorer) -> None:
    resp = await http.post(
        "/openrlhf", json={"query": ["4"], "prompts": ["unrelated prompt"], "labels": ["4"]}
    )
    assert resp.json()["extra_logs"]["query_split_failed"] == [1.0]
    assert scorer.bodies[0]["solution_str"] == "4"
