"""Short factual answers graded by a judge, as NeMo Gym's `simpleqa` server grades them.

Short factual answers graded CORRECT (A) / INCORRECT (B) / NOT_ATTEMPTED (C) by a judge, as NeMo Gym's
`simpleqa` server grades them (the SimpleQA-Verified protocol): 1.0 for A, else 0.0.

The judge gets `judge_prompt_template` filled with `{question}`, `{expected_answer}` (the task's fields; the
reference is `ground_truth`) and `{generation}` (the last assistant message of the sample's `messages`,
stripped), as one user message. Its grade (`read_grade`): the reply when it is one letter, else the last
standalone A / B / C of its last line, else of the whole reply, else C.

Returns `{"score", "extracted_answer", "expected_answer", "verdict" (correct, incorrect, not_attempted),
"judge_output", "is_correct", "is_incorrect", "is_not_attempted"}` (NeMo Gym's shape). An empty judge reply
is a `VerdictParseError`, a judge that cannot be reached a `JudgeCallError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, last_message
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError

__all__ = ["compute_score", "read_grade"]

VERDICTS = {"A": "correct", "B": "incorrect", "C": "not_attempted"}


def read_grade(text: str, letters: str = "ABC", default: str = "C") -> str:
    """One of `letters` from the judge's reply: the reply when it is one letter, else the last standalone
    one of its last line, else of the whole reply; `default` when it names none. A letter inside a word
    (the A of "After") or the judge's earlier quotes of the answer do not count."""
    cleaned = text.strip()
    if len(cleaned) == 1 and cleaned in letters:
        return cleaned
    standalone = re.compile(f"(?<![A-Za-z0-9_])[{letters}](?![A-Za-z0-9_])")
    for part in (cleaned.rsplit("\n", 1)[-1], cleaned):
        found = standalone.findall(part)
        if found:
            return str(found[-1])
    return default


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
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 2048,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    if messages is None:
        raise JudgeConfigError("simpleqa needs the sample's messages (NeMo Gym mapping: response: messages)")
    generation = (last_message(messages, "assistant") or "").strip()
    expected = "" if ground_truth is None else str(ground_truth)
    question = str((extra_info or {}).get("question") or "")
    user = judge_prompt_template.format(question=question, expected_answer=expected, generation=generation)
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
    if not said:
        raise VerdictParseError("the judge's reply is empty", said)
    verdict = VERDICTS[read_grade(said)]
    return {
        "score": 1.0 if verdict == "correct" else 0.0,
        "extracted_answer": generation,
        "expected_answer": expected,
        "verdict": verdict,
        "judge_output": said,
        **{f"is_{v}": float(v == verdict) for v in VERDICTS.values()},
    }
