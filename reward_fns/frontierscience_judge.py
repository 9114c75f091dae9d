"""FrontierScience answers graded by a judge, as NeMo Gym's `frontierscience_judge` server grades them.

The answer is taken as `omniscience.answer_text` does (reasoning blocks removed; an unclosed one leaves no
answer). The judge gets `judge_prompt_template` filled with `{question}`, `{expected_answer}` (the reference
is `ground_truth`), `{rubric}` (the task's, else the reference) and `{generation}`, as one user message.
`judge_mode: olympiad`: the last `Judgement: YES|NO` of its reply decides (YES 1.0, anything else 0.0).
`research`: the last score line (`Score: 7/10`, `7 out of 10`, `FINAL_SCORE[7] / MAX_POSSIBLE_SCORE[10]`,
`Score: 7`) scaled onto `rubric_max_score` passes at `rubric_pass_score_threshold`; with no score line the
judgement decides, flagged `invalid_judge_response`. An answer that itself holds a judgement or a score
line gets nothing read from the reply (the judge may quote it): 0, flagged `invalid_judge_response`.

Returns `{"score", "extracted_answer" (None when empty), "expected_answer", "verdict" (YES, NO or None),
"judge_output", "rubric_score", "rubric_score_normalized", "invalid_judge_response"}` (NeMo Gym's shape).
A judge that cannot be reached is a `JudgeCallError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, last_message
from rewardfleet.reward_fns.omniscience import answer_text

__all__ = ["compute_score", "read_judgement", "read_score"]

_NUMBER = r"([+-]?(?:\d+(?:\.\d+)?|\.\d+))"
_JUDGEMENT = re.compile(r"Judgement:\s*(YES|NO)", re.I)
_BRACKETED = re.compile(
    rf"(?:final[_\s-]*)?score\s*\[\s*{_NUMBER}\s*\]\s*/\s*(?:max[_\s-]*possible[_\s-]*)?score\s*\[\s*{_NUMBER}\s*\]",
    re.I,
)
_OUT_OF = re.compile(rf"{_NUMBER}\s*(?:/|out\s+of)\s*{_NUMBER}", re.I)
_LABELED = re.compile(rf"(?:final\s+)?score\s*[:=]\s*{_NUMBER}", re.I)


def read_judgement(text: str) -> str | None:
    """YES or NO from the last `Judgement:` of the reply, or None."""
    found = _JUDGEMENT.findall(text)
    return found[-1].upper() if found else None


def read_score(text: str, max_score: float) -> float | None:
    """The last score line's score on `max_score` points (a stated score out of a total is scaled), or None
    (also for a total of 0 or less)."""
    for line in reversed(text.splitlines()):
        if "score" not in line.lower():
            continue
        for pattern in (_BRACKETED, _OUT_OF):
            m = pattern.search(line)
            if m:
                total = float(m.group(2))
                return float(m.group(1)) / total * max_score if total > 0 else None
        m = _LABELED.search(line)
        if m:
            return float(m.group(1))
    return None


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    messages: list[dict[str, Any]] | None = None,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompt_template: str = "",
    judge_mode: str = "olympiad",
    rubric_pass_score_threshold: float = 7.0,
    rubric_max_score: float = 10.0,
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 2048,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    if judge_mode not in ("olympiad", "research"):
        raise JudgeConfigError(f"reward_kwargs.judge_mode: olympiad or research, not {judge_mode!r:.40}")
    if messages is None:
        raise JudgeConfigError(
            "frontierscience_judge needs the sample's messages (mapping: response: messages)"
        )
    info = extra_info or {}
    generation = answer_text(last_message(messages, "assistant") or "")
    expected = "" if ground_truth is None else str(ground_truth)
    user = judge_prompt_template.format(
        question=str(info.get("question") or ""),
        expected_answer=expected,
        rubric=str(info.get("rubric") or expected),
        generation=generation,
    )
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
    said = (await ask_judge(judge, [{"role": "user", "content": user}])).text.strip()
    result: dict[str, Any] = {"score": 0.0, "extracted_answer": generation or None,
                              "expected_answer": expected, "verdict": None, "judge_output": said,
                              "rubric_score": None, "rubric_score_normalized": None,
                              "invalid_judge_response": False}  # fmt: skip
    if read_judgement(generation) is not None or read_score(generation, rubric_max_score) is not None:
        result["invalid_judge_response"] = True
        return result
    verdict = result["verdict"] = read_judgement(said)
    if judge_mode == "olympiad":
        result["score"] = 1.0 if verdict == "YES" else 0.0
        return result
    points = read_score(said, rubric_max_score)
    if points is None:
        result.update(invalid_judge_response=True, score=1.0 if verdict == "YES" else 0.0)
        return result
    passed = points >= rubric_pass_score_threshold
    result.update(
        score=1.0 if passed else 0.0,
        rubric_score=points,
        rubric_score_normalized=max(0.0, min(points, rubric_max_score)) / rubric_max_score,
        verdict=verdict or ("YES" if passed else "NO"),
    )
    return result
