"""Undergraduate physics answers checked by math-verify, then by a judge (NeMo Gym's `ugphysics_judge`).

Undergraduate physics answers checked by math-verify, then by the UGPhysics TRUE / FALSE judge when it
says wrong (NeMo Gym's `ugphysics_judge` server).

The library step is `math_with_autograder.library_check`'s (a library 1 is the verdict TRUE; with
`should_use_judge` off a 0 is FALSE). Otherwise the judge gets `judge_prompt_template` (and
`judge_system_message`, when set) filled with `{problem}` (`extra_info["question"]`), `{solution}` (the
task's reference solution), `{expected_answer}` and `{generation}` (the whole response). Its verdict: the
`## Equivalence Judgement` header's TRUE / FALSE, else the last standalone TRUE / FALSE (any case); none is
0 with no verdict. A response that itself holds that header or an upper-case TRUE / FALSE gets no verdict
read from the reply (the judge may quote it).

Returns `{"score", "extracted_answer", "library_reward", "judge_evaluations", "extracted_verdict"}` (NeMo
Gym's shape). A judge that cannot be reached is a `JudgeCallError`.
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

__all__ = ["compute_score", "read_judgement"]

_HEADER = re.compile(r"##\s*Equivalence\s*Judgement\s*\n\s*(TRUE|FALSE)", re.I)
_WORD = re.compile(r"\b(TRUE|FALSE)\b", re.I)
_LABEL = re.compile(r"\b(TRUE|FALSE)\b")


def read_judgement(text: str) -> str | None:
    """TRUE or FALSE from the judge's reply (see the module's docstring), or None."""
    m = _HEADER.search(text)
    if m:
        return m.group(1).upper()
    words = _WORD.findall(text)
    return words[-1].upper() if words else None


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
                              "judge_evaluations": None, "extracted_verdict": "TRUE"}  # fmt: skip
    if library > 0.5:
        return result
    if not should_use_judge:
        result["extracted_verdict"] = "FALSE"
        return result
    info = extra_info or {}
    values = {"problem": str(info.get("question", "")), "solution": str(info.get("solution") or ""),
              "expected_answer": expected, "generation": solution_str}  # fmt: skip
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
    forged = bool(_HEADER.search(solution_str) or _LABEL.search(solution_str))
    verdict = None if forged else read_judgement(reply.text)
    result.update(
        score=1.0 if verdict == "TRUE" else 0.0,
        judge_evaluations=[evaluation(chat, reply.text, verdict)],
        extracted_verdict=verdict,
    )
    return result
