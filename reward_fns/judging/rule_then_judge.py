"""Rule first, judge second (as in verl's FAPO recipe): a rule-verified answer is checked for flawed steps.

1. A built-in rule function (`rule="math_dapo"` by default) decides whether the final answer is right
   (`rule_gate.py`: the rule's settings, and where it runs).
2. Only when it is, an LLM judge (the `judge` pool, template "step_critique": the index of the earliest wrong
   step, -1 if none) reviews the reasoning. Wrong answers and samples of a split in `skip_judge_splits`
   ("test" by default, as FAPO scores its test set by the rule alone) never reach the judge.
3. A flaw lowers the rule's score by `flaw_penalty` (FAPO: 1.0, so a flawed +1 becomes 0).

Judge failures raise (`JudgeCallError`, `VerdictParseError`, ...) unless `on_judge_error="rule"`, which keeps
the rule's score and reports the error in the `judge_error` extra. Every result has the same extra keys.

The reward_kwargs stay flat keywords, declared from three groups (`keywords.py`): the server's
`JudgeContext`, the rule's `RuleGate` and the flaw judge's `FlawJudgeKwargs` (checked into
`FlawJudgeSettings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewardfleet.reward_fns.judging.context import JudgeContext
from rewardfleet.reward_fns.judging.endpoint import ask_judge, read_verdict
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.guards import GuardSettings, GuardSettingsError, check_answer
from rewardfleet.reward_fns.judging.images import image_parts, with_images
from rewardfleet.reward_fns.judging.judge import template_values
from rewardfleet.reward_fns.judging.judge_settings import check_timeout
from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.rule_gate import RuleGate, run_rule
from rewardfleet.reward_fns.judging.settings import (
    GenerationSettings,
    JudgeSettingsError,
    VerdictSettings,
    settings_from,
)
from rewardfleet.reward_fns.judging.templates import JudgeTemplate, TemplateError, get_template
from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from rewardfleet.services.common.router_http import RemoteCallError

DATA_SOURCES: tuple[str, ...] = ()

# Step critiques reason at length.
GENERATION_DEFAULTS = GenerationSettings(max_tokens=4096)
VERDICT_DEFAULTS = VerdictSettings(reasoning_chars=2000)


@dataclass(frozen=True)
class FlawJudgeKwargs:
    """The flaw judge's reward_kwargs, as for `judge` (no method, no probability): of `verdict`, only
    user_template, system_prompt, constrain and reasoning_chars apply."""

    pool: str = "judge"
    model: str = "default"
    template: str = "step_critique"
    timeout_s: float = 300.0
    generation: GenerationSettings | Mapping[str, Any] | None = None
    verdict: VerdictSettings | Mapping[str, Any] | None = None
    guards: GuardSettings | Mapping[str, Any] | bool | None = None


@dataclass(frozen=True)
class FlawJudgeSettings:
    """The flaw judge's settings, checked together: a step_index or binary template, each group an object
    (`generation` over max_tokens 4096, `verdict` over 2000 characters of reasoning)."""

    template: JudgeTemplate
    generation: GenerationSettings
    verdict: VerdictSettings
    guards: GuardSettings
    pool: str = "judge"
    model: str = "default"
    timeout_s: float = 300.0

    @classmethod
    def build(cls, given: FlawJudgeKwargs) -> FlawJudgeSettings:
        check_timeout(given.timeout_s)
        try:
            gen = settings_from(GenerationSettings, given.generation, "generation", GENERATION_DEFAULTS)
            ver = settings_from(VerdictSettings, given.verdict, "verdict", VERDICT_DEFAULTS)
            guards = GuardSettings.coerce(given.guards)
            tmpl = get_template(given.template, user_template=ver.user_template)
        except (TemplateError, JudgeSettingsError, GuardSettingsError) as exc:
            raise JudgeConfigError(str(exc)) from exc
        if tmpl.verdict_kind not in ("step_index", "binary"):
            raise JudgeConfigError(
                f"the flaw judge needs a step_index or binary template, not {tmpl.verdict_kind}"
            )
        return cls(tmpl, gen, ver, guards, given.pool, given.model, given.timeout_s)


# The flat keywords of compute_score: what the server passes, the rule's, then the flaw judge's.
KEYWORDS = Keywords(JudgeContext, RuleGate, FlawJudgeKwargs)


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """{"score": rule score - (flaw_penalty if flawed), "rule_score", "acc", "pred", "judge_called",
    "is_flawed", "judge_verdict", "judge_response", "judge_error", "guard"}.

    The keywords are those of `JudgeContext`, `RuleGate` and `FlawJudgeKwargs` (`inspect.signature` lists
    them)."""
    context, gate, given = KEYWORDS.read(reward_kwargs)
    settings = FlawJudgeSettings.build(given)
    return await rule_then_judge(data_source, solution_str, ground_truth, extra_info, context, gate, settings)


async def rule_then_judge(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None,
    context: JudgeContext,
    gate: RuleGate,
    settings: FlawJudgeSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read and checked."""
    rule_score, correct, pred = await run_rule(gate, data_source, solution_str, ground_truth, extra_info)
    result: dict[str, Any] = {
        "score": rule_score,
        "rule_score": rule_score,
        "acc": correct,
        "pred": pred,
        "judge_called": False,
        "is_flawed": False,
        "judge_verdict": "",
        "judge_response": "",
        "judge_error": "",
        "guard": "",
    }
    if not gate.asks_judge(correct, extra_info):
        return result

    tripped = check_answer(solution_str, settings.guards)
    if tripped is not None:
        # The rule passed an answer with nothing to review (too long, or only an opener around a boxed
        # answer the rule found): it is scored as a flawed one, never above what the judge could give.
        result.update(guard=tripped, is_flawed=True, score=rule_score - gate.flaw_penalty)
        return result

    tmpl, gen, ver = settings.template, settings.generation, settings.verdict
    regex = None
    if ver.constrain:
        regex = verdict_regex(
            tmpl,
            scale_min=1.0,
            scale_max=10.0,
            max_tokens=gen.max_tokens,
            reasoning_chars=ver.reasoning_chars,
        )
    address = context.address(settings.pool)
    endpoint = context.endpoint(address, settings.model, settings.timeout_s, gen, regex)
    values = template_values(solution_str, ground_truth, extra_info, context.prompt, None)
    try:
        messages = tmpl.render({k: v for k, v in values.items() if v is not None}, ver.system_prompt)
    except TemplateError as exc:
        raise JudgeConfigError(str(exc)) from exc
    shown = image_parts(context.images, context.prompt)  # a VLM judge sees the sample's images
    if shown and gen.use_generate:
        raise JudgeConfigError("this sample has images; generation.use_generate cannot carry them")
    messages = with_images(list(messages), shown)
    result["judge_called"] = True
    try:
        reply = await ask_judge(endpoint, messages)
        verdict_read = read_verdict(reply, tmpl, 1.0, 10.0)
    except (RemoteCallError, VerdictParseError) as exc:
        if gate.on_judge_error == "raise":
            raise
        result["judge_error"] = f"{type(exc).__name__}: {exc}"
        return result

    # step_index: -1 (no wrong step) scores 1; binary: "correct" scores 1. Anything else is a flaw.
    flawed = verdict_read.score < 1.0
    result.update(
        is_flawed=flawed,
        judge_verdict=str(verdict_read.value),
        judge_response=reply.text,
        score=rule_score - gate.flaw_penalty if flawed else rule_score,
    )
    return result


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """Check the reward_kwargs once at start-up, naming a misspelt or mistyped setting (groups included)."""
    KEYWORDS.check(reward_kwargs)
    _, _, given = KEYWORDS.read(reward_kwargs)
    FlawJudgeSettings.build(given)
