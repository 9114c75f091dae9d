"""`routes/slime.py`: slime's payload mapping, uids and failure policy, against a scripted scorer."""

from __future__ import annotations

import httpx

from tests.gateway.routes.trainer_scorer import Scorer


async def test_slime_keeps_its_uid_else_derives_one(http: httpx.AsyncClient, scorer: Scorer) -> None:
    await http.post("/slime", json={"response": "4", "label": "4", "uid": "u-1"})
    await http.post("/slime", json={"response": "4", "label": "4"})
    await http.post("/slime", json={"response": "4", "label": "4"})
    given, derived, again = (b["uid"] for b in scorer.bodies)
    assert given == "u-1" and derived == again and len(derived) == 32


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


async def test_slime_answer_carries_step_scores_when_given(http: httpx.AsyncClient) -> None:
    data = (await http.post("/slime", json={"prompt": "q", "response": "steps", "label": "4"})).json()
    assert (data["score"], data["step_scores"]) == (0.5, [1.0, 0.0]) and "turn_scores" not in data
    plain = (await http.post("/slime", json={"prompt": "q", "response": "4", "label": "4"})).json()
    assert "step_scores" not in plain and "turn_scores" not in plain
