"""The `step_judge` built-in against a stand-in judge on 127.0.0.1 that speaks the OpenAI chat protocol and
answers what the test scripts: the step scores are then known exactly. (The real SmolLM2 judge:
tests/model_server/test_smollm2_step_judge.py.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from rewardfleet.reward_fns import step_judge
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError

SOLUTION = "2 + 3 = 5.\n\n5 * 4 = 21.\n\nSo the answer is 21."


@dataclass
class StandIn:
    address: str
    replies: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    state = StandIn(address="")

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        state.requests.append(body)
        content = state.replies.pop(0)
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state.address = f"127.0.0.1:{port}"
    try:
        yield state
    finally:
        await runner.cleanup()


async def _judge(standin: StandIn, solution: str = SOLUTION, **kwargs: Any) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        return await step_judge.compute_score(
            "math", solution, "20", {"question": "What is (2 + 3) * 4?"},
            router_addresses={"judge": standin.address}, http_client=session, model="j", **kwargs,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "first_wrong", "step_scores", "score"),
    [
        ("Step 1 multiplies wrongly.\n\\boxed{1}", 1, [1.0, 0.0, 0.0], 0.0),
        ("All fine.\n\\boxed{-1}", -1, [1.0, 1.0, 1.0], 1.0),
        ("\\boxed{0}", 0, [0.0, 0.0, 0.0], 0.0),
    ],
)
async def test_step_scores_follow_the_first_wrong_step(
    standin: StandIn, reply: str, first_wrong: int, step_scores: list[float], score: float
) -> None:
    standin.replies.append(reply)
    result = await _judge(standin)
    assert (result["first_wrong_step"], result["step_scores"], result["score"]) == (
        first_wrong,
        step_scores,
        score,
    )
    assert result["steps"] == 3 and result["usage"]["total_tokens"] == 59
    [sent] = standin.requests
    user = sent["messages"][-1]["content"]
    assert "Step 0: 2 + 3 = 5.\n\nStep 1: 5 * 4 = 21.\n\nStep 2: So the answer is 21." in user
    assert "What is (2 + 3) * 4?" in user and "[Ground Truth]\n20" in user
    # the grammar allows exactly -1, 0, 1, 2 as the verdict: never a step that does not exist
    regex = re.compile(sent["regex"], re.DOTALL)
    assert all(regex.fullmatch(f"Thinking.\n\\boxed{{{i}}}") for i in (-1, 0, 1, 2))
    assert not any(regex.fullmatch(f"\\boxed{{{i}}}") for i in (3, 10, -2))
    assert regex.fullmatch(reply)


async def test_first_error_aggregate_gives_partial_credit(standin: StandIn) -> None:
    standin.replies.append("\\boxed{2}")
    result = await _judge(standin, aggregate_by="first_error")
    assert result["step_scores"] == [1.0, 1.0, 0.0] and result["score"] == pytest.approx(2 / 3)


async def test_unconstrained_reply_naming_a_missing_step_is_an_error(standin: StandIn) -> None:
    standin.replies.append("\\boxed{7}")
    with pytest.raises(VerdictParseError, match="named step 7, but the response has 3 steps"):
        await _judge(standin, constrain=False)
    assert "regex" not in standin.requests[0]


async def test_no_steps_no_call(standin: StandIn) -> None:
    result = await _judge(standin, solution=" \n\n ")
    assert (result["score"], result["step_scores"], standin.requests) == (0.0, [], [])


async def test_step_rule_tag(standin: StandIn) -> None:
    standin.replies.append("\\boxed{-1}")
    result = await _judge(standin, solution="a ки b ки", step_rule="tag:ки")
    assert result["step_scores"] == [1.0, 1.0]
    assert "Step 0: a\n\nStep 1: b" in standin.requests[0]["messages"][-1]["content"]
