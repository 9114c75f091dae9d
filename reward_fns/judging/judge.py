"""GenRM: an LLM judge, reached through the `judge` pool's sglang-router, scores the response in [0, 1].

Three methods (reward_kwargs `method`):

- `verdict` (default): the template's question, answered by generation (`/v1/chat/completions`, or SGLang's
  `/generate` with token ids when `generation.use_generate`);
- `probability`: no generation; `POST /v1/score` with the "Yes"/"No" label-token ids and score
  P(Yes) / (P(Yes) + P(No)), straight to the pool's model servers named by
  `probability.score_server_address` (the router does not proxy it; details: `probability.py`);
- `answer_match`: the response's final answer is found and compared with the reference by rule
  (`answer_match.py`); the model is asked only which of the response's numbers is its final answer
  (constrained to them) or, for free text the rule cannot settle, for the template's verdict (the embedded
  default fleet's method).

The reward_kwargs stay flat keywords (`judge_settings.JudgeKwargs`), in groups (`settings.py`): `generation`,
`verdict`, `probability`, and `guards` (empty, opener-only and over-long answers get no judge call).

Constrained verdicts (`verdict.constrain`, on by default) send SGLang's `regex` (`verdict_grammar.py`); set
it to False for a backend that rejects unknown fields.

A judge that cannot be read, or a call that fails, raises (`VerdictParseError`, `JudgeTruncatedError`,
`JudgeCallError`, `JudgeConfigError`), never scores 0; extras keep the raw verdict and the judge's text.

Images (`images`, `image_url` parts of `prompt`) go to the judge's chat request (images.py), not /generate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from rewardfleet.reward_fns.judging.answer_match import (
    decide,
    number_choice_messages,
    number_choice_regex,
    number_strings,
    pick_value,
    reference_number,
)
from rewardfleet.reward_fns.judging.context import JudgeContext
from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint, ask_judge, read_verdict, total_usage
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.guards import check_answer
from rewardfleet.reward_fns.judging.images import image_parts, with_images
from rewardfleet.reward_fns.judging.judge_settings import JudgeKwargs, JudgeSettings
from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.probability import judge_probability
from rewardfleet.reward_fns.judging.templates import (
    DEFAULT_RUBRIC,
    TemplateError,
    as_text,
    number_steps,
    problem_text,
)
from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError

DATA_SOURCES: tuple[str, ...] = ()

# The flat keywords of compute_score: what the server passes, then the judge's reward_kwargs.
KEYWORDS = Keywords(JudgeContext, JudgeKwargs)


def template_values(
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    prompt: Any,
    rubric: str | None,
) -> dict[str, str | None]:
    reference = as_text(ground_truth)
    info = extra_info or {}
    return {
        "problem": problem_text(prompt, extra_info),
        "response": solution_str,
        "reference": reference,
        "rubric": rubric or as_text(info.get("rubric")) or DEFAULT_RUBRIC,
        "steps": number_steps(solution_str),
        # Pairwise: the response is compared with a reference *response*, else with the ground truth.
        "other_response": as_text(info.get("reference_response")) or reference,
    }


def _pairwise_values(values: Mapping[str, str | None], response_first: bool) -> dict[str, str | None]:
    ours, theirs = values["response"], values["other_response"]
    a, b = (ours, theirs) if response_first else (theirs, ours)
    return {**values, "response_a": a, "response_b": b}


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """Score `solution_str` with an LLM judge; see the module docstring and docs/remote_reward_fns.md.

    The keywords are those of `JudgeContext` and `JudgeKwargs` (`inspect.signature` lists them).
    Returns {"score": 0..1, "judge_verdict": str, "judge_verdict_source": str, "judge_response": str,
    "judge_template": str, "judge_pool": str, "usage": {prompt/completion/total tokens} or {}, "guard": ""}
    (method probability: verdict "p_yes=…", source "probability", response "", no pool, no usage; method
    answer_match: also "judge_answer", the final answer read). When an answer trips a guard (`guards`):
    the guards' `score` without a judge call, the guard's name in "guard", source "guard", other keys empty.
    """
    context, given = KEYWORDS.read(reward_kwargs)
    return await judge_sample(solution_str, ground_truth, extra_info, context, JudgeSettings.build(given))


async def judge_sample(
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    context: JudgeContext,
    settings: JudgeSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read and checked."""
    pool = settings.pool
    address = context.address(pool)
    tmpl, gen, ver = settings.template, settings.generation, settings.verdict
    by_probability = settings.method == "probability"
    shown = image_parts(context.images, context.prompt)  # the sample's images, for a VLM judge
    if shown and (by_probability or gen.use_generate):
        raise JudgeConfigError(
            "this sample has images; only the chat route (/v1/chat/completions) carries them: not method "
            "probability or generation.use_generate"
        )
    tripped = check_answer(solution_str, settings.guards)
    if tripped is not None:
        guarded: dict[str, Any] = {
            "score": float(settings.guards.score),
            "judge_verdict": "",
            "judge_verdict_source": "guard",
            "judge_response": "",
            "judge_template": tmpl.name,
            "guard": tripped,
        }
        if settings.method == "answer_match":
            guarded["judge_answer"] = ""
        return guarded if by_probability else {**guarded, "judge_pool": pool, "usage": {}}
    regex = None
    if ver.constrain:
        regex = verdict_regex(
            tmpl, scale_min=ver.scale_min, scale_max=ver.scale_max, max_tokens=gen.max_tokens,
            reasoning_chars=ver.reasoning_chars, line=ver.line,
        )  # fmt: skip
    endpoint = context.endpoint(address, settings.model, settings.timeout_s, gen, regex)
    values = template_values(solution_str, ground_truth, extra_info, context.prompt, ver.rubric)

    def render(vals: Mapping[str, str | None]) -> list[dict[str, Any]]:
        try:
            messages = tmpl.render({k: v for k, v in vals.items() if v is not None}, ver.system_prompt)
        except TemplateError as exc:
            raise JudgeConfigError(str(exc)) from exc
        return with_images(list(messages), shown)

    if by_probability:
        prob = settings.probability
        score, p_yes, p_no = await judge_probability(
            endpoint, prob.score_server_address, render(values), prob.label_tokens
        )
        return {
            "score": score,
            "judge_verdict": f"p_yes={p_yes:.6g} p_no={p_no:.6g}",
            "judge_verdict_source": "probability",
            "judge_response": "",
            "judge_template": tmpl.name,
            "guard": "",
        }

    if tmpl.verdict_kind == "pairwise":
        orders = (True, False) if ver.pairwise_both_orders else (True,)
        replies = await asyncio.gather(
            *(ask_judge(endpoint, render(_pairwise_values(values, o))) for o in orders)
        )
        verdicts = [read_verdict(r, tmpl, ver.scale_min, ver.scale_max) for r in replies]
        # A verdict's score is that of response A; flip it when our response was B.
        scores = [v.score if first else 1.0 - v.score for v, first in zip(verdicts, orders, strict=True)]
        return {
            "score": sum(scores) / len(scores),
            "judge_verdict": " / ".join(str(v.value) for v in verdicts),
            "judge_verdict_source": " / ".join(v.source for v in verdicts),
            "judge_response": "\n\n=====\n\n".join(r.text for r in replies),
            "judge_template": tmpl.name,
            "judge_pool": pool,
            "usage": total_usage(replies),
            "guard": "",
        }

    matched: dict[str, Any] = {}
    if settings.method == "answer_match":
        if values["reference"] is None:
            raise JudgeConfigError("method answer_match needs a reference answer (ground_truth)")
        judgment = decide(solution_str, values["reference"])
        matched = {"judge_answer": judgment.answer}
        if judgment.decision in ("match", "mismatch"):
            right = judgment.decision == "match"
            return {
                "score": 1.0 if right else 0.0,
                "judge_verdict": "correct" if right else "incorrect",
                "judge_verdict_source": "rule",
                "judge_response": "",
                "judge_template": tmpl.name,
                "judge_pool": pool,
                "usage": {},
                "guard": "",
                **matched,
            }
        if judgment.decision == "ask_number":
            return await _answer_by_number_choice(endpoint, values, tmpl.name, pool)

    reply = await ask_judge(endpoint, render(values))
    verdict_read = read_verdict(reply, tmpl, ver.scale_min, ver.scale_max)
    return {
        "score": verdict_read.score,
        "judge_verdict": str(verdict_read.value),
        "judge_verdict_source": verdict_read.source,
        "judge_response": reply.text,
        "judge_template": tmpl.name,
        "judge_pool": pool,
        "usage": reply.usage,
        "guard": "",
        **matched,
    }


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """Check the reward_kwargs once at start-up, naming a misspelt or mistyped setting (groups included)."""
    KEYWORDS.check(reward_kwargs)
    _, given = KEYWORDS.read(reward_kwargs)
    JudgeSettings.build(given)


# Number-choice answers are a few tokens; the reply is constrained to one of the response's numbers.
_NUMBER_CHOICE_MAX_TOKENS = 16


async def _answer_by_number_choice(
    endpoint: JudgeEndpoint, values: Mapping[str, str | None], template_name: str, pool: str
) -> dict[str, Any]:
    """The model picks which of the response's numbers is its final answer (constrained to them); the rule
    compares that number with the reference."""
    response, reference = values["response"] or "", values["reference"] or ""
    choices = number_strings(response)
    asked = replace(
        endpoint,
        regex=number_choice_regex(choices) if endpoint.regex is not None else None,
        max_tokens=min(endpoint.max_tokens, _NUMBER_CHOICE_MAX_TOKENS),
    )
    reply = await ask_judge(asked, number_choice_messages(values["problem"], response))
    picked = pick_value(reply.text)
    if picked is None:
        raise VerdictParseError(f"the judge named no single number of {choices}", reply.text)
    right = picked == reference_number(reference)
    return {
        "score": 1.0 if right else 0.0,
        "judge_verdict": "correct" if right else "incorrect",
        "judge_verdict_source": "model_answer",
        "judge_response": reply.text,
        "judge_template": template_name,
        "judge_pool": pool,
        "usage": reply.usage,
        "guard": "",
        "judge_answer": reply.text.strip(),
    }
