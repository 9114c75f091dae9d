"""Physics answers checked by math-verify, then by a judge (NeMo Gym's `physics_judge` server).

Physics answers checked by math-verify, then by NeMo Skills' physics judge when it says wrong (NeMo Gym's
`physics_judge` server).

The library step is `math_with_autograder.library_check`'s. With `should_use_judge` and a library 0, the
judge gets `judge_prompt_template` (and `judge_system_message`, when set) filled with `{problem}`
(`extra_info["question"]`), `{generation}` (the whole response) and `{expected_answer}`; `[Correct]`
anywhere in its reply, in any case, is 1.0, anything else 0.0. A response that itself holds `[Correct]` gets
no verdict read from the reply (the judge may quote it) and scores 0.

Returns `{"score", "extracted_answer", "library_reward", "judge_evaluations"}` (NeMo Gym's shape;
`judge_evaluations` None when the library decided). A judge that cannot be reached is a `JudgeCallError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, evaluation, templated_chat
from rewardfleet.reward_fns.math_with_autograder import run_library_check

__all__ = ["compute_score"]

_CORRECT = re.compile(r"\[correct\]", re.I)


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompt_template: str = "",
    judge_system_message: str | None = None,
    should_use_judge: bool = True,
    parsing_timeout_s: int | None = 5,
    verify_timeout_s: int | None = 5,
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 2048,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if should_use_judge and not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    expected = "" if ground_truth is None else str(ground_truth)
    library, extracted = await run_library_check(expected, solution_str, parsing_timeout_s, verify_timeout_s)
    result: dict[str, Any] = {"score": library, "extracted_answer": extracted, "library_reward": library,
                              "judge_evaluations": None}  # fmt: skip
    if not should_use_judge or library > 0.5:
        return result
    values = {"problem": str((extra_info or {}).get("question", "")), "generation": solution_str,
              "expected_answer": expected}  # fmt: skip
    chat = templated_chat(judge_system_message, judge_prompt_template, values)
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
    correct = bool(_CORRECT.search(reply.text)) and not _CORRECT.search(solution_str)
    result["judge_evaluations"] = [evaluation(chat, reply.text, "[Correct]" if correct else "[Incorrect]")]
    result["score"] = 1.0 if correct else 0.0
    return result
