"""Math answers checked by math-verify, then by a judge (NeMo Gym's `math_with_autograder`).

Math answers checked by math-verify, then by an autograder judge when it says wrong (NeMo Gym's
`math_with_autograder` server).

The library step: the reference (`ground_truth`, outer `\\(...\\)` or `$...$` removed) in `\\boxed{}` is
parsed as LaTeX, the response as expressions and LaTeX; 1.0 when one parsed answer equals the reference,
`extracted_answer` the first such answer (else the first parsed, else None). Anything math-verify raises,
its timeouts included, is 0 with no answer, as NeMo Gym has it. With `should_use_judge` and a library 0, the
judge gets `judge_prompt_template` (and `judge_system_message`, when set) filled with `{problem}`
(`extra_info["question"]`), `{predicted_answer}` (the last balanced `\\boxed{...}` of the response, else the
extracted answer, else the whole response) and `{expected_answer}`; the first of `judge_equal_label` /
`judge_not_equal_label` in its reply decides, neither is 0 (and so is a predicted answer that itself holds
a label: `judging.nemo_gym.shows_label`).

math-verify times itself out with `signal.alarm`: with its timeouts on, the function must run on the main
thread (the gateway's event loop; elsewhere a `JudgeConfigError`); with both None it runs in a thread.

Returns `{"score", "extracted_answer", "library_reward", "judge_evaluations"}` (NeMo Gym's shape;
`judge_evaluations` None when the library decided). A judge that cannot be reached is a `JudgeCallError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

import aiohttp
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import (
    endpoint,
    evaluation,
    first_label,
    shows_label,
    templated_chat,
)

__all__ = ["compute_score", "last_boxed", "library_check", "run_library_check"]

_GOLD = (LatexExtractionConfig(),)
_PRED = (ExprExtractionConfig(), LatexExtractionConfig())


def _without_delimiters(text: str) -> str:
    text = text.strip()
    if text.startswith("\\(") and text.endswith("\\)"):
        text = text[2:-2].strip()
    if len(text) > 1 and text.startswith("$") and text.endswith("$"):
        text = text[1:-1].strip()
    return text


def library_check(
    expected: str, generated: str, parsing_timeout_s: int | None = 5, verify_timeout_s: int | None = 5
) -> tuple[float, str | None]:
    """(reward, extracted answer) of the library step; any failure is (0.0, None)."""
    try:
        gold = parse(
            "\\boxed{" + _without_delimiters(expected) + "}", _GOLD, parsing_timeout=parsing_timeout_s
        )
        if not gold:
            return 0.0, None
        pred = parse(generated, _PRED, parsing_timeout=parsing_timeout_s)
        right = verify(gold, pred, 6, timeout_seconds=verify_timeout_s)
        golds, preds = [str(g) for g in gold], [str(p) for p in pred]
        same = (p for p in preds if any(verify(g, p, timeout_seconds=verify_timeout_s) for g in golds))
        return (1.0 if right else 0.0), next(same, preds[0] if preds else None)
    except BaseException as exc:  # math-verify's TimeoutException is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
            raise
        return 0.0, None


async def run_library_check(
    expected: str, generated: str, parsing_timeout_s: int | None, verify_timeout_s: int | None
) -> tuple[float, str | None]:
    """`library_check` on the calling thread when math-verify's timeouts are on (they need the main thread:
    elsewhere a `JudgeConfigError`), in a worker thread when both are None."""
    args = (expected, generated, parsing_timeout_s, verify_timeout_s)
    if parsing_timeout_s is None and verify_timeout_s is None:
        return await asyncio.to_thread(library_check, *args)
    if threading.current_thread() is threading.main_thread():
        return library_check(*args)
    raise JudgeConfigError(
        "math-verify's timeouts use signal.alarm, which needs the main thread: run the event loop"
        " there, or set parsing_timeout_s and verify_timeout_s to None"
    )


def last_boxed(text: str) -> str | None:
    """The content of the last balanced `\\boxed{...}` (or, with none, `\\fbox{...}`) of `text`, or None."""
    start = text.rfind("\\boxed")
    start = text.rfind("\\fbox") if start < 0 else start
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                whole = text[start : i + 1]
                for prefix in ("\\boxed{", "\\fbox{"):
                    if whole.startswith(prefix):
                        return whole[len(prefix) : -1]
                return None
    return None


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
    judge_equal_label: str = "\\boxed{Correct}",
    judge_not_equal_label: str = "\\boxed{Incorrect}",
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
    shown = last_boxed(solution_str) or extracted or solution_str
    values = {"problem": str((extra_info or {}).get("question", "")), "predicted_answer": shown,
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
    labels = (judge_equal_label, judge_not_equal_label)
    label = None if shows_label(shown, labels) else first_label(reply.text, labels)
    result["judge_evaluations"] = [evaluation(chat, reply.text, label)]
    result["score"] = 1.0 if label == judge_equal_label else 0.0
    return result
