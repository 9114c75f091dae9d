"""An LLM judge of equivalence with a reference answer, as NeMo Gym's `equivalence_llm_judge` server asks
and reads it: the prompt template filled with `{question}`, `{expected_answer}`, `{generated_answer}`, asked
of a judge pool, and the verdict is whichever label comes first in the judge's last text: `equal_label`
(`[[A=B]]`) is 1, `not_equal_label` or neither is 0.

Takes the sample's chat `messages` (gateway NeMo Gym mapping `response: messages`): the question is the
last user message, the answer the last assistant message (the last match of `response_extract_regex`, or
of a task's `template_metadata.output_regex` with `use_per_record_regex`). `ground_truth` is the reference
(`expected_answer`). The reward_kwargs keep NeMo Gym's config names and defaults (`judge_prompt_template`
is the template's text: NeMo Gym's `prompt_templates/equivalence_llm_judge.txt`, for one);
`check_twice_swap`, `check_full_generation_on_fail` and `extraction_length_threshold` add the second judge
pass as it does.

Returns `{"score", "expected_answer", "judge_evaluations"}`: one per judge call, in NeMo Gym's shape
(`responses_create_params.input`: the messages sent; `response.output`: the judge's text; `verdict_label`).
A judge that cannot be reached is a `JudgeCallError`, never a score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, evaluation, last_message

__all__ = ["compute_score", "last_match", "verdict"]

MAX_TEMPLATE_CHARS = 100_000


def last_match(text: str, pattern: str | None) -> str:
    """The last match of `pattern` in `text` (its first non-empty group, else the whole match); `text`
    when there is no pattern, no match, or the pattern is not a valid regex."""
    if not pattern:
        return text
    try:
        matches = list(re.finditer(pattern, text, flags=re.MULTILINE | re.DOTALL))
    except re.error:
        return text
    if not matches:
        return text
    m = matches[-1]
    for group in m.groups():
        if isinstance(group, str) and group.strip():
            return group.strip()
    return m.group(0).strip()


def verdict(text: str, equal_label: str, not_equal_label: str) -> str | None:
    """The label found first in `text`, or None."""
    eq, neq = text.find(equal_label), text.find(not_equal_label)
    if eq < 0 and neq < 0:
        return None
    return equal_label if eq >= 0 and (neq < 0 or eq < neq) else not_equal_label


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    messages: list[dict[str, Any]] | None = None,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompt_template: str = "",
    judge_system_message: str | None = None,
    judge_equal_label: str = "[[A=B]]",
    judge_not_equal_label: str = "[[A!=B]]",
    question_extract_regex: str | None = None,
    response_extract_regex: str | None = None,
    msg_extraction_failure: str = "[NO VALID ANSWER EXTRACTED]",
    check_twice_swap: bool = False,
    reward_if_swap_fails: float = 0.0,
    use_per_record_regex: bool = True,
    extraction_length_threshold: int | None = 120,
    check_full_generation_on_fail: bool = True,
    reward_if_full_generation_succeeds: float = 0.5,
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template or len(judge_prompt_template) > MAX_TEMPLATE_CHARS:
        raise JudgeConfigError(
            "reward_kwargs.judge_prompt_template: the judge's prompt template text is required"
        )
    if messages is None:
        raise JudgeConfigError(
            "equivalence_llm_judge needs the sample's messages (NeMo Gym: response: messages)"
        )
    expected = "" if ground_truth is None else str(ground_truth)
    question = last_match((last_message(messages, "user") or "").strip(), question_extract_regex)
    info = extra_info or {}
    metadata = info.get("template_metadata")
    record_regex = metadata.get("output_regex") if isinstance(metadata, Mapping) else None
    record_regex = (
        record_regex if use_per_record_regex and isinstance(record_regex, str) and record_regex else None
    )
    long_answer = extraction_length_threshold is not None and len(expected) > extraction_length_threshold
    regex = response_extract_regex if record_regex is None else (None if long_answer else record_regex)
    skip_second = record_regex is not None and long_answer

    def answer(pattern: str | None) -> str:
        text = (last_message(messages, "assistant") or "").strip()
        return last_match(text, pattern) if text else msg_extraction_failure

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
    evaluations: list[dict[str, Any]] = []

    async def ask(expected_answer: str, generated_answer: str) -> bool:
        user = judge_prompt_template.strip().format(
            question=question, expected_answer=expected_answer, generated_answer=generated_answer
        )
        chat = [{"role": "system", "content": judge_system_message}] if judge_system_message else []
        chat.append({"role": "user", "content": user})
        reply = await ask_judge(judge, chat)
        label = verdict(reply.text, judge_equal_label, judge_not_equal_label)
        evaluations.append(evaluation(chat, reply.text, label))
        return label == judge_equal_label

    generated = answer(regex)
    if await ask(expected, generated):
        score = 1.0
        if check_twice_swap and not skip_second:
            score = 1.0 if await ask(generated, expected) else reward_if_swap_fails
    else:
        score = 0.0
        if not skip_second and check_full_generation_on_fail and record_regex is not None:
            score = reward_if_full_generation_succeeds if await ask(expected, answer(None)) else 0.0
    return {"score": score, "expected_answer": expected, "judge_evaluations": evaluations}
