"""One terminal-agent step graded against the reference step, as NeMo Gym's `terminus_judge` does.

One terminal-agent step (Terminus' JSON of keystrokes) against the reference step, as NeMo Gym's
`terminus_judge` server grades it: a schema check, a task-complete check, string similarity of the
keystrokes, and an LLM judge when the similarity is below the threshold.

The response's text (after a `</think>`, if any) and the reference (`ground_truth`, the task's
`expected_answer`, else `extra_info["metadata"]["expected_answer"]`) must be JSON objects; both are checked
against the schema of the task's harness (`metadata.harness`: `terminus_1` / `terminus_2`, the JSON Schemas
`terminus_1_schema` / `terminus_2_schema`); a reference marked complete needs the step marked complete. Then
with `enable_string_similarity`, the keystrokes of both (concatenated) at a `difflib` ratio of at least
`threshold` (`extra_info["threshold"]`, else `string_similarity_threshold`) score 1; else, with
`enable_llm_judge`, the judge gets `judge_prompt_template` filled with `{expected_answer}` and
`{generated_answer}` (after `judge_system_message`, when set). Its verdict is the last label in the last 200
characters of its reply, else the first anywhere; `check_twice_swap` asks again with the two swapped. A step
whose text holds a label gets no verdict read (`judging.nemo_gym.shows_label`). With both off, passing the
checks scores 1.

Returns NeMo Gym's fields: `score`, `model_output`, `parsed_output`, `similarity_score`,
`schema_check_passed`, `task_complete_check_passed`, `string_similarity_passed`, `judge_passed`,
`failure_reason` (none, expected_answer_invalid, model_output_invalid, schema_check_failed,
task_complete_check_failed, string_similarity_below_threshold, unknown_harness, judge_not_equivalent,
judge_parsing_failed, judge_swap_parsing_failed) and `judge_evaluations`. A judge that cannot be reached is
a `JudgeCallError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from difflib import SequenceMatcher
from typing import Any

import aiohttp
from jsonschema import Draft202012Validator

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, evaluation, shows_label

__all__ = ["compute_score", "keystroke_similarity", "read_verdict"]


def keystroke_similarity(expected: Mapping[str, Any], step: Mapping[str, Any]) -> float:
    """difflib's ratio of the two steps' keystrokes, each concatenated; 1.0 when neither has any."""

    def keys(data: Mapping[str, Any]) -> list[str]:
        commands = data.get("commands", [])
        return [c.get("keystrokes", "") for c in commands if isinstance(c, dict) and "keystrokes" in c]

    ours, theirs = keys(step), keys(expected)
    if not ours or not theirs:
        return 1.0 if not ours and not theirs else 0.0
    return SequenceMatcher(None, "".join(theirs), "".join(ours)).ratio()


def _complete(step: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    if expected.get("task_complete"):
        return bool(step.get("task_complete"))
    if expected.get("is_task_complete"):
        return bool(step.get("is_task_complete"))
    return True


def read_verdict(text: str, equal: str, not_equal: str) -> str | None:
    """The label that comes last in the reply's last 200 characters, else the first one anywhere."""
    tail = text[-200:]
    found = [(tail.rfind(label), label) for label in (equal, not_equal)]
    if any(pos >= 0 for pos, _ in found):
        return max(found)[1]
    found = [(pos, label) for label in (equal, not_equal) if (pos := text.find(label)) >= 0]
    return min(found)[1] if found else None


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    terminus_1_schema: Mapping[str, Any] | None = None,
    terminus_2_schema: Mapping[str, Any] | None = None,
    judge_prompt_template: str = "",
    judge_system_message: str | None = None,
    judge_equal_label: str = "[[A=B]]",
    judge_not_equal_label: str = "[[A!=B]]",
    check_twice_swap: bool = False,
    reward_if_swap_fails: float = 0.0,
    enable_string_similarity: bool = False,
    string_similarity_threshold: float = 0.95,
    enable_llm_judge: bool = True,
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    schemas = {"terminus_1": terminus_1_schema, "terminus_2": terminus_2_schema}
    if any(not isinstance(s, Mapping) for s in schemas.values()):
        raise JudgeConfigError("reward_kwargs.terminus_1_schema and terminus_2_schema: JSON Schemas required")
    if enable_llm_judge and not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    info = extra_info or {}
    raw_metadata = info.get("metadata")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
    reference = ground_truth or metadata.get("expected_answer")
    expected = "" if reference is None else str(reference)
    generated = solution_str.strip()
    text = generated.split("</think>")[-1].strip() if "</think>" in generated else generated
    result: dict[str, Any] = {
        "score": 0.0, "model_output": text if expected and generated else "", "parsed_output": None,
        "similarity_score": None, "schema_check_passed": None, "task_complete_check_passed": None,
        "string_similarity_passed": None, "judge_passed": None, "failure_reason": "none",
        "judge_evaluations": [],
    }  # fmt: skip

    def failed(reason: str) -> dict[str, Any]:
        result["failure_reason"] = reason
        return result

    if not expected:
        return failed("expected_answer_invalid")
    if not generated:
        return failed("model_output_invalid")
    reference_step = _object(expected)
    if reference_step is None:
        return failed("expected_answer_invalid")
    step = _object(text)
    if step is None:
        return failed("model_output_invalid")
    result["parsed_output"] = step
    harness = metadata.get("harness")
    schema = schemas.get(harness) if isinstance(harness, str) else None
    if schema is None:
        return failed("unknown_harness")
    validator = Draft202012Validator(schema)
    if not validator.is_valid(reference_step):
        return failed("expected_answer_invalid")
    result["schema_check_passed"] = validator.is_valid(step)
    if not result["schema_check_passed"]:
        return failed("schema_check_failed")
    result["task_complete_check_passed"] = _complete(step, reference_step)
    if not result["task_complete_check_passed"]:
        return failed("task_complete_check_failed")

    if enable_string_similarity:
        result["similarity_score"] = keystroke_similarity(reference_step, step)
        threshold = info.get("threshold")
        threshold = string_similarity_threshold if threshold is None else float(threshold)
        result["string_similarity_passed"] = result["similarity_score"] >= threshold
        if result["string_similarity_passed"]:
            result["score"] = 1.0
            return result
        if not enable_llm_judge:
            return failed("string_similarity_below_threshold")
    if not enable_llm_judge:
        result["score"] = 1.0
        return result

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
    labels = (judge_equal_label, judge_not_equal_label)

    async def verdict(expected_answer: str, generated_answer: str) -> str | None:
        user = judge_prompt_template.strip().format(
            expected_answer=expected_answer, generated_answer=generated_answer
        )
        chat = [{"role": "system", "content": judge_system_message}] if judge_system_message else []
        chat.append({"role": "user", "content": user})
        reply = await ask_judge(judge, chat)
        label = None if shows_label(text, labels) else read_verdict(reply.text, *labels)
        result["judge_evaluations"].append(evaluation(chat, reply.text, label))
        return label

    first = await verdict(expected, text)
    if first is None:
        return failed("judge_parsing_failed")
    if first == judge_not_equal_label:
        result["judge_passed"] = False
        return failed("judge_not_equivalent")
    if check_twice_swap:
        second = await verdict(text, expected)
        if second is None:
            return failed("judge_swap_parsing_failed")
        if second == judge_not_equal_label:
            result.update(judge_passed=False, score=float(reward_if_swap_fails))
            return failed("judge_not_equivalent")
    result.update(judge_passed=True, score=1.0)
    return result
