"""Factual answers graded by a judge, as NeMo Gym's `omniscience` server (AA-Omniscience) does.

Factual answers graded CORRECT (A) / INCORRECT (B) / PARTIAL (C) / NOT_ATTEMPTED (D) by a judge, as NeMo
Gym's `omniscience` server grades them (AA-Omniscience): 1.0 for A, else 0.0; the omniscience index is +1
for a correct answer, -1 for an incorrect (a hallucination), 0 otherwise.

The answer is the last assistant message of the sample's `messages` with `<think>` / `<thinking>` blocks
(and anything before a lone closing tag) removed; a reasoning block opened and never closed leaves no
answer. The judge gets `judge_prompt_template` filled with `{question}`, `{expected_answer}` (the reference
is `ground_truth`) and `{generation}`, as one user message; its grade is read as `simpleqa.read_grade`
does, with B (incorrect) when it names none.

Returns `{"score", "extracted_answer", "expected_answer", "verdict" (correct, incorrect, partial,
not_attempted), "judge_output", "is_correct", "is_incorrect", "is_partial", "is_not_attempted",
"omniscience_index", "is_hallucination"}` (NeMo Gym's shape). An empty judge reply is a
`VerdictParseError`, a judge that cannot be reached a `JudgeCallError`.
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
from rewardfleet.reward_fns.simpleqa import read_grade

__all__ = ["answer_text", "compute_score", "strip_reasoning"]

VERDICTS = {"A": "correct", "B": "incorrect", "C": "partial", "D": "not_attempted"}
_BLOCKS = (re.compile(r"<think>.*?</think>", re.S), re.compile(r"<thinking>.*?</thinking>", re.S))
_LEADING = (re.compile(r"^.*?</think>", re.S), re.compile(r"^.*?</thinking>", re.S))


def strip_reasoning(raw: str) -> str:
    """`raw` without `<think>` / `<thinking>` blocks and anything before a lone closing tag, stripped."""
    text = raw.strip()
    for pattern in (*_BLOCKS, *_LEADING):
        text = pattern.sub("", text)
    return text.strip()


def answer_text(raw: str) -> str:
    """The answer without its reasoning blocks; "" when a block is opened and never closed."""
    opened = "<think>" in raw or "<thinking>" in raw
    closed = "</think>" in raw or "</thinking>" in raw
    return "" if opened and not closed else strip_reasoning(raw)


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
        raise JudgeConfigError(
            "omniscience needs the sample's messages (NeMo Gym mapping: response: messages)"
        )
    generation = answer_text(last_message(messages, "assistant") or "")
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
    verdict = VERDICTS[read_grade(said, "ABCD", "B")]
    flags = {f"is_{v}": float(v == verdict) for v in VERDICTS.values()}
    return {
        "score": flags["is_correct"],
        "extracted_answer": generation,
        "expected_answer": expected,
        "verdict": verdict,
        "judge_output": said,
        **flags,
        "omniscience_index": flags["is_correct"] - flags["is_incorrect"],
        "is_hallucination": flags["is_incorrect"],
    }
