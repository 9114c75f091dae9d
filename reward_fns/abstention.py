"""Answers that may abstain, graded by a judge as NeMo Gym's `abstention` server grades them.

Answers that may abstain (`\\boxed{[IDK]}`), graded by a judge, as NeMo Gym's `abstention` server grades
them: `correct_reward` (1.0) for a correct answer, `abstention_reward` (0.5) for an abstention, else
`incorrect_reward` (0.0).

The answer is the content of the last balanced `\\boxed{...}` of the last assistant message (reasoning
blocks removed), else that whole message. One equal to `abstention_token` after SQuAD normalisation
(lower case, articles and punctuation removed) abstains without a judge call. Otherwise the judge gets
`judge_prompt_template` filled with `{question}`, `{target}` (the reference, `ground_truth`: the task's
`answer`) and `{predicted_answer}`, as one user message; its reply (reasoning blocks removed) is graded as
`simpleqa.read_grade` reads it: A correct, C not attempted (an abstention), anything else incorrect.

Returns `{"score", "extracted_answer", "ground_truth", "verdict" (correct, abstain, incorrect),
"judge_output" (None without a judge call), "is_correct", "is_abstain", "is_incorrect",
"omniscience_index"}` (NeMo Gym's shape). An empty judge reply is a `VerdictParseError`.
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
from rewardfleet.reward_fns.omniscience import strip_reasoning
from rewardfleet.reward_fns.simpleqa import read_grade

__all__ = ["boxed", "compute_score", "normalised"]


def boxed(text: str) -> str | None:
    """The content of the last `\\boxed{` of `text` up to its matching brace; None when unbalanced."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start + len("\\boxed{") : i - 1] if depth == 0 else None


def normalised(text: str) -> str:
    """SQuAD's answer normalisation: lower case, articles and punctuation removed, spaces collapsed."""
    text = re.sub(r"\b(a|an|the)\b", " ", text.lower().strip())
    return " ".join(re.sub(r"[^\w\s]", "", text).split())


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
    abstention_reward: float = 0.5,
    abstention_token: str = "[IDK]",
    correct_reward: float = 1.0,
    incorrect_reward: float = 0.0,
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
            "abstention needs the sample's messages (NeMo Gym mapping: response: messages)"
        )
    text = strip_reasoning(last_message(messages, "assistant") or "")
    found = boxed(text)
    extracted = text if found is None else found
    reference = "" if ground_truth is None else str(ground_truth)
    said: str | None = None
    if normalised(extracted) == normalised(abstention_token):
        verdict = "abstain"
    else:
        user = judge_prompt_template.format(
            question=str((extra_info or {}).get("question") or ""),
            target=reference,
            predicted_answer=extracted,
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
        said = strip_reasoning((await ask_judge(judge, [{"role": "user", "content": user}])).text)
        if not said:
            raise VerdictParseError("the judge's reply is empty", said)
        verdict = {"A": "correct", "C": "abstain"}.get(read_grade(said, "ABC", "B"), "incorrect")
    rewards = {"correct": correct_reward, "abstain": abstention_reward, "incorrect": incorrect_reward}
    flags = {f"is_{v}": float(v == verdict) for v in rewards}
    return {
        "score": float(rewards[verdict]),
        "extracted_answer": extracted,
        "ground_truth": reference,
        "verdict": verdict,
        "judge_output": said,
        **flags,
        "omniscience_index": flags["is_correct"] - flags["is_incorrect"],
    }
