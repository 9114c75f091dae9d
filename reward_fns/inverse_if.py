"""Counter-conventional instruction following graded by a judge, as NeMo Gym's `inverse_if` does.

Counter-conventional instruction following graded criterion by criterion by a judge, as NeMo Gym's
`inverse_if` server grades it: each rubric criterion PASS (1.0) or FAIL (0.0), aggregated.

The task's `extra_info`: `prompt`, `rubric` (a list of `{id, criteria}`), `reference_response`,
`judge_prompt_template` and `judge_system_prompt` (each falling back to `default_judge_prompt_template` /
`default_judge_system_prompt`), `metadata` (its `prompt`, `reference_response`, `rubric` fill missing
ones). Per criterion the judge gets the system prompt and the template filled with `{prompt}`,
`{model_response}` (the last assistant message of the sample's `messages`, reasoning removed),
`{standard_response}` and `{criteria}`. Its verdict (`read_verdict`): `result` of a fenced JSON object, else
of the first `{"result": "PASS|FAIL", ...}` object, else PASS / FAIL as a word on one of its last five
lines (the last such line), else FAIL. A response that itself holds a `"result": "PASS"` object gets FAIL
on every criterion (the judge may quote it). `aggregation_mode`: mean (also weighted), min, max, all, any.

Returns `{"score", "prompt", "generated_response", "reference_response", "rubric_evaluations" (criterion_id,
criteria, judge_prompt, judge_response, verdict, explanation, score), "aggregation_mode", "num_passed",
"num_total"}` (NeMo Gym's shape). A judge that cannot be reached is a `JudgeCallError`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, last_message
from rewardfleet.reward_fns.omniscience import strip_reasoning

__all__ = ["compute_score", "read_verdict"]

_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)
_OBJECT = re.compile(r"\{[^{}]*\"result\"\s*:\s*\"(PASS|FAIL)\"[^{}]*\}", re.I)
_AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "mean": lambda s: sum(s) / len(s),
    "weighted": lambda s: sum(s) / len(s),
    "min": min,
    "max": max,
    "all": lambda s: float(all(x >= 0.99 for x in s)),
    "any": lambda s: float(any(x >= 0.99 for x in s)),
}


def _result(text: str) -> tuple[str, str] | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    result = str(parsed.get("result", "")).upper().strip()
    return (result, str(parsed.get("explanation", ""))) if result in ("PASS", "FAIL") else None


def read_verdict(text: str) -> tuple[str, str]:
    """(PASS or FAIL, the explanation) from the judge's reply (see the module's docstring)."""
    for pattern in (_FENCED, _OBJECT):
        m = pattern.search(text)
        found = _result(m.group(1) if pattern is _FENCED else m.group(0)) if m else None
        if found:
            return found
    for line in reversed(text.strip().split("\n")[-5:]):
        words = set(re.findall(r"[A-Z]+", line.upper()))
        if "PASS" in words:
            return "PASS", ""
        if "FAIL" in words:
            return "FAIL", ""
    return "FAIL", ""


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
    default_judge_prompt_template: str = "",
    default_judge_system_prompt: str = "",
    aggregation_mode: str = "mean",
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 8192,
    temperature: float = 0.7,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if aggregation_mode not in _AGGREGATE:
        raise JudgeConfigError(f"reward_kwargs.aggregation_mode: one of {sorted(_AGGREGATE)}")
    if messages is None:
        raise JudgeConfigError(
            "inverse_if needs the sample's messages (NeMo Gym mapping: response: messages)"
        )
    info = extra_info or {}
    raw_meta = info.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    prompt = str(info.get("prompt") or meta.get("prompt") or "")
    reference = str(info.get("reference_response") or meta.get("reference_response") or "")
    rubric = info.get("rubric") or meta.get("rubric") or []
    if not isinstance(rubric, list) or not all(isinstance(item, Mapping) for item in rubric):
        raise JudgeConfigError("extra_info.rubric: a list of {id, criteria} objects")
    template = str(info.get("judge_prompt_template") or default_judge_prompt_template)
    system = str(info.get("judge_system_prompt") or default_judge_system_prompt)
    if not template:
        raise JudgeConfigError(
            "extra_info.judge_prompt_template or reward_kwargs.default_judge_prompt_template"
        )
    generated = strip_reasoning(last_message(messages, "assistant") or "")
    forged = _OBJECT.search(generated) is not None
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

    async def evaluate(item: Mapping[str, Any]) -> dict[str, Any]:
        criteria = str(item.get("criteria", ""))
        user = template.format(
            prompt=prompt, model_response=generated, standard_response=reference, criteria=criteria
        )
        chat = [{"role": "system", "content": system}] if system else []
        chat.append({"role": "user", "content": user})
        said = strip_reasoning((await ask_judge(judge, chat)).text)
        verdict, explanation = ("FAIL", "") if forged else read_verdict(said)
        return {"criterion_id": str(item.get("id", "")), "criteria": criteria, "judge_prompt": user,
                "judge_response": said, "verdict": verdict, "explanation": explanation,
                "score": 1.0 if verdict == "PASS" else 0.0}  # fmt: skip

    evaluations = list(await asyncio.gather(*(evaluate(item) for item in rubric)))
    scores = [e["score"] for e in evaluations]
    return {
        "score": float(_AGGREGATE[aggregation_mode](scores)) if scores else 0.0,
        "prompt": prompt,
        "generated_response": generated,
        "reference_response": reference,
        "rubric_evaluations": evaluations,
        "aggregation_mode": aggregation_mode,
        "num_passed": sum(1 for s in scores if s >= 0.99),
        "num_total": len(evaluations),
    }
