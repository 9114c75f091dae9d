"""IMO-style proofs graded against a reference and a rubric (NeMo Gym's `imo_proofbench_judge`).

IMO-style proofs graded against a reference solution and a rubric, as NeMo Gym's `imo_proofbench_judge`
server grades them: the last `\\boxed{...}` answer, symbolically equal to `ground_truth` (the task's
`expected_answer`), is correct without a judge; otherwise a judge grades it.

The answer is the last balanced `\\boxed{...}` of the last assistant message (reasoning blocks removed); none
scores 0 with NeMo Gym's canned "no answer" judgement. Symbolic equality (`math_equal`): a multiple-choice
letter through math-verify's string extraction, equal normalised LaTeX, else math-verify on both wrapped in
`$...$` (plain words are never equal); any error is "not equal". The judge gets `judge_prompt_template`
filled with `{problem}`, `{reference_solution}`, `{rubric}` (the task's) and `{predicted_answer}`, as one
user message; its verdict is the first of `Judgement: Yes/No`, `\\boxed{Correct/Incorrect}`, `<points>N out
of 7</points>` (N >= 6 passes). An answer holding such a verdict itself gets none read from the reply
(`no_judge_score`).

Returns `{"score", "extracted_answer", "judge_output", "judge_points", "judge_correct", "symbolic_correct",
"any_correct", "no_judge_score"}` (NeMo Gym's shape). A judge that cannot be reached is a `JudgeCallError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp
from latex2sympy2_extended import NormalizationConfig, normalize_latex
from math_verify import LatexExtractionConfig, StringExtractionConfig, parse, verify

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, last_message
from rewardfleet.reward_fns.math_with_autograder import last_boxed
from rewardfleet.reward_fns.omniscience import strip_reasoning

__all__ = ["compute_score", "math_equal", "read_verdict"]

PASS_POINTS = 6
_LETTERS = "ABCDEFGHIJ"
_JUDGEMENT = re.compile(r"\*{0,2}Judgement\*{0,2}\s*:", re.I)
_BOXED_VERDICT = re.compile(r"\\boxed\s*\{\s*(Correct|Incorrect)\s*\}", re.I)
_POINTS = re.compile(r"<points>\s*(\d+)\s*out of 7\s*</points>", re.I)
_PERCENT = re.compile(r"(\d+\.?\d*)(?:\\%|%)")
_WORDS = re.compile(r"[a-zA-Z ,]+")
_LATEX = re.compile(r"\$.*\$|\\\(.*\\\)|\\\[.*\\\]|\\boxed\{", re.S)


def _tidy(expr: str) -> str:
    m = _PERCENT.fullmatch(expr)
    return (m.group(1) if m else expr).rstrip(".\\")


def math_equal(reference: str, answer: str) -> bool:
    """Whether `answer` is symbolically equal to `reference` (see the module's docstring)."""
    if not answer:
        return False
    try:
        if re.fullmatch(f"[{_LETTERS}]", reference.strip()):
            letters = [StringExtractionConfig(strings=tuple(_LETTERS))]
            if verify(parse(reference, letters), parse(answer, letters)):
                return True
        ref, ans = _tidy(reference), _tidy(answer)
        norm_ref, norm_ans = (
            normalize_latex(ref, NormalizationConfig),
            normalize_latex(ans, NormalizationConfig),
        )
        if norm_ref.replace(" ", "") == norm_ans.replace(" ", ""):
            return True
        if _WORDS.fullmatch(norm_ref) and _WORDS.fullmatch(norm_ans):
            return False
        ref, ans = (t if _LATEX.search(t) else f"${t}$" for t in (ref, ans))
        return bool(verify(parse(ref, [LatexExtractionConfig()]), parse(ans, [LatexExtractionConfig()])))
    except Exception:
        return False


def read_verdict(text: str) -> tuple[bool | None, int | None]:
    """(passed or None when no format is found, the points when stated)."""
    points_match = _POINTS.search(text)
    points = int(points_match.group(1)) if points_match else None
    m = _JUDGEMENT.search(text)
    if m:
        said = text[m.end() :].strip().lstrip("*").strip().lower()
        if said.startswith("yes") or said.startswith("no"):
            return said.startswith("yes"), points
    m = _BOXED_VERDICT.search(text)
    if m:
        return m.group(1).lower() == "correct", points
    return (None if points is None else points >= PASS_POINTS), points


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
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    if messages is None:
        raise JudgeConfigError(
            "imo_proofbench_judge needs the sample's messages (mapping: response: messages)"
        )
    text = strip_reasoning(last_message(messages, "assistant") or "")
    extracted = last_boxed(text) if "\\boxed" in text else None
    canned = {"judge_points": None, "no_judge_score": 0.0}
    if not extracted:
        no = "Reasoning: No answer was provided.\nJudgement: No"
        return {"score": 0.0, "extracted_answer": "", "judge_output": no, **canned,
                **dict.fromkeys(("judge_correct", "symbolic_correct", "any_correct"), 0.0)}  # fmt: skip
    if math_equal("" if ground_truth is None else str(ground_truth), extracted):
        same = "Reasoning: The two answers are identical.\nJudgement: Yes"
        return {"score": 1.0, "extracted_answer": extracted, "judge_output": same, **canned,
                **dict.fromkeys(("judge_correct", "symbolic_correct", "any_correct"), 1.0)}  # fmt: skip
    info = extra_info or {}
    user = judge_prompt_template.format(
        problem=str(info.get("problem") or ""),
        reference_solution=str(info.get("reference_solution") or ""),
        rubric=str(info.get("rubric") or ""),
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
    said = (await ask_judge(judge, [{"role": "user", "content": user}])).text.strip()
    passed, points = read_verdict(said)
    if read_verdict(extracted) != (None, None):
        passed = None
    ok = 1.0 if passed else 0.0
    return {"score": ok, "extracted_answer": extracted, "judge_output": said, "judge_points": points,
            "judge_correct": ok, "symbolic_correct": 0.0, "any_correct": ok,
            "no_judge_score": 1.0 if passed is None else 0.0}  # fmt: skip
