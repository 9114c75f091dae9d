"""The gateway's client of a vLLM PRM pool (`api: vllm_pooling`; the `prm` built-in, reward_fns/prm.py, over
services/common/router_http.py) reads answers and error bodies made by vLLM 0.33.0's own classes: its
`PoolingResponse` (vllm_standin.py answers one row per step tag, `[1 - p, p]` with p = 1 / (k + 2) for the
k-th tag) and its `ErrorResponse`, as its exception handlers write them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rewardfleet.reward_fns.prm import PrmCallError, compute_score
from rewardfleet.services.common.router_http import post_json


async def test_step_rewards_come_from_vllms_pooling_response(vllm_url: str) -> None:
    steps = ["Three plus four.", "Count up from three.", "Seven."]
    result = await compute_score(
        "math",
        "\n\n".join(steps),
        prompt="What is 3 + 4?",
        router_addresses={"prm": vllm_url},
        pool="prm",
        aggregate="mean",
    )
    want = [1 / (k + 2) for k in range(len(steps))]
    assert result["step_scores"] == pytest.approx(want)
    assert result["score"] == pytest.approx(sum(want) / len(want))


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            {"messages": [{"role": "user", "content": "q"}], "normalize": True}, id="vllm-validation"
        ),
        pytest.param({"input": 5}, id="pydantic-validation"),
    ],
)
async def test_vllms_error_bodies_reach_the_caller_with_its_message(
    vllm_url: str, body: dict[str, Any]
) -> None:
    async with httpx.AsyncClient() as client:
        said = await client.post(f"{vllm_url}/pooling", json=body, timeout=30)
    assert said.status_code == 400
    message = said.json()["error"]["message"]
    with pytest.raises(PrmCallError) as caught:
        await post_json(None, vllm_url, "/pooling", body, error_cls=PrmCallError)
    assert caught.value.status == 400 and caught.value.kind == "http_status"
    assert caught.value.server_message == message
    assert message[:200] in str(caught.value)
