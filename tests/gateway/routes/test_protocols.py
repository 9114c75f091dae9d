"""OpenRLHF and slime routes, mounted on a bare app around a scripted `score_one` (the gateway's contract).

The live-gateway versions of these checks are in test_live_gateway.py; these pin the payload mapping and the
error policy exactly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardfleet.services.gateway.routes import openrlhf, slime
from rewardfleet.services.gateway.routes.error_handlers import install_error_handlers
from rewardfleet.services.gateway.routes.query_split import split_query
from rewardfleet.services.gateway.routes.trainer_protocol import TrainerBackend, content_uid
from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult, Status, Timings

IM_PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


class Scorer:
    """Stands in for the gateway's scoring callable: 1.0 if the answer equals the ground truth."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, sample: ScoreRequest) -> ScoreResult:
        self.bodies.append(sample.model_dump(exclude_unset=True))
        answer = sample.solution_str.replace("<|im_end|>", "").strip()

        def result(score: float | None, status: Status, extra: dict[str, Any], error: str = "") -> Any:
            return ScoreResult(
                uid=sample.uid,
                score=score,
                extra=extra,
                reward_fn=sample.reward_fn or "exact",
                data_source=sample.data_source,
                status=status,
                error=ErrorInfo(type=error.split(":")[0], message=error.split(":")[1]) if error else None,
                timings=Timings(compute_s=0.0, total_s=0.0),
            )

        if answer == "boom":
            return result(None, "error", {}, "ValueError:boom")
        if answer == "slow":
            return result(None, "timeout", {}, "timeout:over 1s")
        if answer == "fallback":
            return result(-1.0, "error", {}, "KeyError:x")
        correct = answer == str(sample.ground_truth)
        return result(float(correct), "ok", {"acc": correct, "pred": answer, "n": 3})


@pytest.fixture
def scorer() -> Scorer:
    return Scorer()


@pytest.fixture
async def http(scorer: Scorer) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    install_error_handlers(app)
    backend = TrainerBackend(score_one=scorer)
    app.include_router(openrlhf.make_router(backend))
    app.include_router(slime.make_router(backend))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


def openrlhf_payload(*answers: str, labels: list[Any] | None = None) -> dict[str, Any]:
    """What OpenRLHF posts: decoded prompt+response tokens, the templated prompt, and the label column."""
    return {
        "query": [IM_PROMPT + a + "<|im_end|>" for a in answers],
        "prompts": [IM_PROMPT] * len(answers),
        "labels": labels if labels is not None else ["4"] * len(answers),
    }


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


async def test_slime_keeps_its_uid_else_derives_one(http: httpx.AsyncClient, scorer: Scorer) -> None:
    await http.post("/slime", json={"response": "4", "label": "4", "uid": "u-1"})
    await http.post("/slime", json={"response": "4", "label": "4"})
    await http.post("/slime", json={"response": "4", "label": "4"})
    given, derived, again = (b["uid"] for b in scorer.bodies)
    assert given == "u-1" and derived == again and len(derived) == 32


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
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(openrlhf.make_router(TrainerBackend(score_one=Scorer(), error_score=0.25)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as http:
        resp = await http.post("/openrlhf", json=openrlhf_payload("boom"))
    assert resp.json()["rewards"] == [0.25]


def test_split_query_fallbacks() -> None:
    assert split_query("PROMPT answer", "PROMPT ") == ("answer", True)
    # left-truncated prompt: the query begins inside the prompt
    prompt = "system: be brief. " * 10 + "user: 2+2? assistant: "
    truncated = prompt[37:]
    assert split_query(truncated + "4", prompt) == ("4", True)
    assert split_query("something else entirely", prompt) == ("something else entirely", False)
    assert split_query("q", None) == ("q", False)
    assert split_query("q", [{"role": "user", "content": "q"}]) == ("q", False)


@settings(max_examples=300, deadline=None)
@given(
    prompt=st.text(alphabet="abc <|>\n", min_size=1, max_size=200),
    cut=st.integers(min_value=0, max_value=199),
    response=st.text(alphabet="0123456789", max_size=40),
)
def test_split_query_any_truncation_length(prompt: str, cut: int, response: str) -> None:
    """OpenRLHF keeps only the prompt's last tokens: any surviving tail, even one character, is stripped
    (the response's characters never occur in the prompt here, so the split is unambiguous)."""
    tail = prompt[min(cut, len(prompt) - 1) :]
    assert split_query(tail + response, prompt) == (response, True)


async def test_openrlhf_unsplittable_query_is_flagged(http: httpx.AsyncClient, scorer: Scorer) -> None:
    resp = await http.post(
        "/openrlhf", json={"query": ["4"], "prompts": ["unrelated prompt"], "labels": ["4"]}
    )
    assert resp.json()["extra_logs"]["query_split_failed"] == [1.0]
    assert scorer.bodies[0]["solution_str"] == "4"


async def test_slime_sample(http: httpx.AsyncClient, scorer: Scorer) -> None:
    """What slime's remote_rm posts: the sample's prompt (text or messages), response and label."""
    messages = [{"role": "user", "content": "What is 2+2?"}]
    resp = await http.post("/slime", json={"prompt": messages, "response": "4", "label": "4"})
    assert resp.status_code == 200
    data = resp.json()
    assert data["score"] == 1.0 and data["acc"] is True and data["pred"] == "4" and data["n"] == 3
    assert data["status"] == "ok" and data["reward_failed"] is False and data["extra"]["acc"] is True
    assert scorer.bodies[0]["prompt"] == messages and scorer.bodies[0]["data_source"] == "slime"
    await http.post("/slime/gsm8k", json={"prompt": "q", "response": "4", "label": "4", "data_source": "x"})
    assert scorer.bodies[1]["reward_fn"] == "gsm8k" and scorer.bodies[1]["data_source"] == "x"


async def test_slime_failures(http: httpx.AsyncClient) -> None:
    resp = await http.post("/slime", json={"prompt": "q", "response": "boom", "label": "4"})
    assert resp.status_code == 500 and resp.json()["error"]["type"] == "RewardFunctionFailed"
    resp = await http.post("/slime?error_score=0", json={"prompt": "q", "response": "slow", "label": "4"})
    assert resp.status_code == 200
    assert resp.json()["score"] == 0.0 and resp.json()["reward_failed"] is True
    assert resp.json()["status"] == "timeout"
    resp = await http.post("/slime", json={"prompt": "q", "label": "4"})
    assert resp.status_code == 422
