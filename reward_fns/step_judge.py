"""Step judge: a GenRM names the first wrong step of the response, ProcessBench style; per-step scores follow.

The response is split into steps by `step_rule` (`_steps.split_steps`: blank lines by default), shown to the
judge numbered from 0 (`Step 0: ...`) in the `step_critique` template (problem, ground truth, steps), and
the judge answers with the index of the earliest wrong step, or -1 when every step is right, in `\\boxed{}`.

Constrained (`constrain`, on by default): the request carries SGLang's `regex` (`_verdict_grammar`) whose
verdict line allows exactly `-1, 0, ..., n-1` for a response of n steps, after a bounded stretch of reasoning
(`reasoning_chars`), so a backend that constrains decoding (SGLang, our CPU model server) always answers in a
form `_verdicts.parse_verdict` reads and never names a step that does not exist. Unconstrained, a reply that
cannot be read or that names step n or later is a `VerdictParseError` (never a 0).

Returns `{"score", "step_scores", "first_wrong_step", "steps", "judge_response", "judge_pool", "usage",
"judge_verdict_source"}`: `step_scores[i]` is 1.0 before the first wrong step and 0.0 from it on;
`score` is their `aggregate` (`judging.steps.aggregate`; `min` by default: 1.0 only when no step is wrong;
`first_error` gives partial credit, the fraction of steps before the first wrong one). A response with no
steps (empty or blank) is scored 0.0 with `step_scores` [] and no judge call.

The judge is reached like `judge`'s: the `pool` router (`router_addresses`, else `reward_router_address`),
`POST /v1/chat/completions` with `model`, `max_tokens` and `temperature`.

The reward_kwargs stay flat keywords, declared from two groups (`judging/keywords.py`): the server's
`StepJudgeContext` and the judge's `StepJudgeSettings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint, ask_judge, read_verdict
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.judge import template_values
from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.steps import DEFAULT_STEP_RULE, aggregate, check_rule, split_steps
from rewardfleet.reward_fns.judging.templates import get_template
from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from rewardfleet.services.common.router_http import resolve_address

DATA_SOURCES: tuple[str, ...] = ()
TEMPLATE = "step_critique"


@dataclass(frozen=True)
class StepJudgeContext:
    """What the server passes with each call: the routers, the shared HTTP session, the sample's prompt."""

    reward_router_address: str | None = None
    router_addresses: Mapping[str, str] | None = None
    http_client: aiohttp.ClientSession | None = None
    prompt: Any = None


@dataclass(frozen=True)
class StepJudgeSettings:
    """The step judge's reward_kwargs: the pool and model asked, how the response is cut into steps
    (`step_rule`, at most `max_steps`) and their scores aggregated (`aggregate_by`), and the call's
    generation (`max_tokens`, `temperature`, `reasoning_chars` and `constrain` of its verdict) and timeout."""

    pool: str = "judge"
    model: str = "default"
    step_rule: str = DEFAULT_STEP_RULE
    max_steps: int = 64
    aggregate_by: str = "min"
    max_tokens: int = 1024
    temperature: float = 0.0
    reasoning_chars: int = 400
    constrain: bool = True
    timeout_s: float = 120.0


# The flat keywords of compute_score: what the server passes, then the step judge's.
KEYWORDS = Keywords(StepJudgeContext, StepJudgeSettings)


def numbered(steps: list[str]) -> str:
    """The steps as the judge sees them: `Step i: <text>`, 0-based, separated by blank lines."""
    return "\n\n".join(f"Step {i}: {step}" for i, step in enumerate(steps))


def step_line(n_steps: int) -> str:
    """The verdict line allowing exactly -1 and the indices of `n_steps` steps (longer numbers first)."""
    choices = sorted(["-1", *(str(i) for i in range(n_steps))], key=lambda c: (-len(c), c))
    return r"\\boxed\{(" + "|".join(choices) + r")\}"


def scores_from(first_wrong: int, n_steps: int) -> list[float]:
    """1.0 for each step before the first wrong one, 0.0 from it on (-1: every step right)."""
    right = n_steps if first_wrong == -1 else first_wrong
    return [1.0] * right + [0.0] * (n_steps - right)


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """Judge the steps of `solution_str` (module docstring). The keywords are those of `StepJudgeContext`
    and `StepJudgeSettings` (`inspect.signature` lists them)."""
    context, settings = KEYWORDS.read(reward_kwargs)
    return await judge_steps(solution_str, ground_truth, extra_info, context, settings)


async def judge_steps(
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None,
    context: StepJudgeContext,
    settings: StepJudgeSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read."""
    pool, step_rule, aggregate_by = settings.pool, settings.step_rule, settings.aggregate_by
    check_rule(step_rule)
    aggregate([1.0], aggregate_by)  # an unknown aggregate fails here, before any call
    steps = split_steps(solution_str, step_rule, settings.max_steps)
    if not steps:
        return {
            "score": 0.0,
            "step_scores": [],
            "first_wrong_step": 0,
            "steps": 0,
            "judge_response": "",
            "judge_pool": pool,
            "usage": {},
            "judge_verdict_source": "empty",
        }
    try:
        address = resolve_address(pool, context.router_addresses, context.reward_router_address)
    except ValueError as exc:
        raise JudgeConfigError(str(exc)) from exc
    template = get_template(TEMPLATE)
    values = template_values(solution_str, ground_truth, extra_info, context.prompt, None)
    if values["reference"] is None:
        raise JudgeConfigError("step_judge needs the ground truth (the template shows it to the judge)")
    values["steps"] = numbered(steps)
    regex = None
    if settings.constrain:
        regex = verdict_regex(
            template, scale_min=0, scale_max=1, max_tokens=settings.max_tokens,
            reasoning_chars=settings.reasoning_chars,
            line=step_line(len(steps)),
        )  # fmt: skip
    endpoint = JudgeEndpoint(
        session=context.http_client,
        address=address,
        model=settings.model,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        timeout_s=settings.timeout_s,
        regex=regex,
    )
    messages = template.render({k: v for k, v in values.items() if v is not None})
    reply = await ask_judge(endpoint, messages)
    verdict = read_verdict(reply, template, 0.0, 1.0)
    first_wrong = int(verdict.value)
    if first_wrong >= len(steps):
        raise VerdictParseError(
            f"the judge named step {first_wrong}, but the response has {len(steps)} steps",
            reply.text,
        )
    step_scores = scores_from(first_wrong, len(steps))
    return {
        "score": aggregate(step_scores, aggregate_by),
        "step_scores": step_scores,
        "first_wrong_step": first_wrong,
        "steps": len(steps),
        "judge_response": reply.text,
        "judge_pool": pool,
        "usage": reply.usage,
        "judge_verdict_source": verdict.source,
    }
