"""Long-term-memory questions graded yes / no by a judge, as NeMo Gym's `longmemeval` server does.

Long-term-memory questions (LongMemEval) graded yes / no by a judge, as NeMo Gym's `longmemeval` server
grades them: 1.0 when the judge says yes.

The task's `extra_info["verifier_metadata"]` holds `question_id`, `question_type`, `question`, `answer` and
`abstention` (also implied by `_abs` in the id). The rubric: `rubric_abstention` for an abstention
question, else by type (`rubric_contain` for single-session-user / -assistant and multi-session,
`rubric_temporal` for temporal-reasoning, `rubric_knowledge_update`, `rubric_preference` for
single-session-preference), each with three positional `{}`: question, answer, response. The response is the
response's text with `<think>` blocks removed (an unclosed one and what follows dropped); an empty one
scores 0 without a judge call. The judge's reply (reasoning removed) says yes when it holds the word yes
and not the word no (NeMo Gym tests for "yes" anywhere in it, which "yesterday" or a quoted answer
satisfy).

Returns NeMo Gym's fields: `score`, `question_id`, `question_type`, `abstention`, `judge_label`,
`judge_raw`, `judge_error` (bad_metadata, unknown_question_type, empty_judge_output or None),
`judge_error_detail`, `empty_response`, `generation` (its first 500 characters). A judge that cannot be
reached is a `JudgeCallError` (NeMo Gym records `judge_call_failed` and a 0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint

__all__ = ["compute_score", "says_yes", "without_think"]

_THINK = re.compile(r"<think>.*?</think>", re.S)
_RUBRIC_OF_TYPE = {
    "single-session-user": "rubric_contain",
    "single-session-assistant": "rubric_contain",
    "multi-session": "rubric_contain",
    "temporal-reasoning": "rubric_temporal",
    "knowledge-update": "rubric_knowledge_update",
    "single-session-preference": "rubric_preference",
}


def without_think(text: str) -> str:
    """`text` without `<think>` blocks: an unclosed one drops the rest, a lone `</think>` what precedes it."""
    if "<think>" in text and "</think>" not in text:
        return text.split("<think>", 1)[0].strip()
    if "</think>" not in text:
        return text
    cleaned = _THINK.sub("", text)
    return (text.split("</think>", 1)[-1] if cleaned == text else cleaned).strip()


def says_yes(reply: str) -> bool:
    words = set(re.findall(r"[a-z]+", reply.lower()))
    return "yes" in words and "no" not in words


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    rubric_contain: str = "",
    rubric_temporal: str = "",
    rubric_knowledge_update: str = "",
    rubric_preference: str = "",
    rubric_abstention: str = "",
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 64,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    rubrics = {"rubric_contain": rubric_contain, "rubric_temporal": rubric_temporal,
               "rubric_knowledge_update": rubric_knowledge_update, "rubric_preference": rubric_preference,
               "rubric_abstention": rubric_abstention}  # fmt: skip
    missing = [name for name, text in rubrics.items() if not text]
    if missing:
        raise JudgeConfigError(f"reward_kwargs.{missing[0]}: the rubric's text is required")
    raw = (extra_info or {}).get("verifier_metadata")
    meta = raw if isinstance(raw, Mapping) else {}

    def field(key: str) -> str:
        return str(meta.get(key, "") or "")

    qid, qtype = field("question_id"), field("question_type")
    abstention = bool(meta.get("abstention")) or "_abs" in qid
    response = without_think(solution_str).strip()
    result: dict[str, Any] = {"score": 0.0, "question_id": qid, "question_type": qtype,
                              "abstention": abstention, "judge_label": False, "judge_raw": "",
                              "judge_error": None, "judge_error_detail": "", "empty_response": not response,
                              "generation": response[:500]}  # fmt: skip
    rubric = rubrics["rubric_abstention"] if abstention else rubrics.get(_RUBRIC_OF_TYPE.get(qtype, ""))
    if not meta or not qtype or not field("question"):
        result["judge_error"] = "bad_metadata"
    elif rubric is None:
        result["judge_error"] = "unknown_question_type"
    if result["judge_error"] or not response or rubric is None:
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
    prompt = rubric.format(field("question"), field("answer"), response)
    said = without_think((await ask_judge(judge, [{"role": "user", "content": prompt}])).text).strip()
    result["judge_raw"] = said
    if not said:
        result["judge_error"] = "empty_judge_output"
    elif says_yes(said):
        result.update(judge_label=True, score=1.0)
    return result
