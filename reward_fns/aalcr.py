"""Long-context reading questions (AA-LCR), as NeMo Gym's `aalcr` server grades them.

A judge reads the question, the official answer and the candidate answer and replies exactly `CORRECT` (1)
or `INCORRECT` (0); any other reply scores 0, flagged `invalid_judge_response`. An empty answer scores 0
without a judge call (`invalid_model_response`).

The judge gets `judge_prompt_template` filled with `{question}` and `{answer}` (the task's fields, in
`extra_info`) and `{candidate_answer}` (the response's text, stripped), as one user message. The task's
`input_tokens_band` (`<80k`, `80k-100k`, `100k-110k`, `110k-128k`, `128k+`) names the band key the reward is
also reported under (`reward_lt_80k`, ...).

Returns `{"score", "invalid_model_response", "invalid_judge_response", "judge_responses_create_params",
"judge_response"}` and every band key (the task's holds the score, the others None): NeMo Gym's shape. An
empty judge reply is a `VerdictParseError`, a judge that cannot be reached a `JudgeCallError`, an unknown
band a `JudgeConfigError`: never a score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, evaluation
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError

__all__ = ["BANDS", "compute_score"]

BANDS = {
    "<80k": "reward_lt_80k",
    "80k-100k": "reward_80k_100k",
    "100k-110k": "reward_100k_110k",
    "110k-128k": "reward_110k_128k",
    "128k+": "reward_128k_plus",
}


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompt_template: str = "",
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    info = extra_info or {}
    band = info.get("input_tokens_band")
    if not isinstance(band, str) or band not in BANDS:
        raise JudgeConfigError(f"extra_info.input_tokens_band: one of {sorted(BANDS)}, not {band!r:.40}")
    candidate = solution_str.strip()
    if not candidate:
        return {"score": 0.0, "invalid_model_response": True, **_bands(band, 0.0)}
    user = judge_prompt_template.format(
        question=str(info.get("question", "")), answer=str(info.get("answer", "")), candidate_answer=candidate
    )
    chat = [{"role": "user", "content": user}]
    judge = endpoint(
        pool,
        router_addresses,
        reward_router_address,
        http_client,
        model=model,
        max_tokens=max_tokens,
        temperature=temperature,
        timeout_s=timeout_s,
    )
    reply = await ask_judge(judge, chat)
    said = reply.text.strip()
    if not said:
        raise VerdictParseError("the judge's reply is empty", reply.text)
    score = 1.0 if said == "CORRECT" else 0.0
    record = evaluation(chat, reply.text, None)
    return {
        "score": score,
        "invalid_model_response": False,
        "invalid_judge_response": said not in ("CORRECT", "INCORRECT"),
        "judge_responses_create_params": record["responses_create_params"],
        "judge_response": record["response"],
        **_bands(band, score),
    }


def _bands(band: str, score: float) -> dict[str, float | None]:
    """Every band key, the task's holding the score and the others None (NeMo Gym's response shape)."""
    return {key: (score if name == band else None) for name, key in BANDS.items()}
