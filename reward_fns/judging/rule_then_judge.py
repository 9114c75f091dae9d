"""Rule first, judge second (as in verl's FAPO recipe): a rule-verified answer is checked for flawed steps.

1. A built-in rule function (`rule="math_dapo"` by default) decides whether the final answer is right.
2. Only when it is, an LLM judge (the `judge` pool, template "step_critique": the index of the earliest wrong
   step, -1 if none) reviews the reasoning. Wrong answers and samples of a split in `skip_judge_splits`
   ("test" by default, as FAPO scores its test set by the rule alone) never reach the judge.
3. A flaw lowers the rule's score by `flaw_penalty` (FAPO: 1.0, so a flawed +1 becomes 0).

Where the rule runs: `math_dapo`, `math` and `gsm8k` are pure-Python string checks, so they run in a
worker thread (`asyncio.to_thread`) off the event loop. `math_verify` times itself out with `signal.alarm`,
which works only in the main thread (elsewhere verl got silent 0 scores), so it runs on the calling thread —
the event loop, about 10 ms per check — and if that is not the main thread this raises `RuleCheckError`.
With `rule_kwargs={"parsing_timeout_s": None, "verify_timeout_s": None}` it sets no alarm and goes to a
thread too (then only the gateway's per-function timeout bounds it). Other rules run on the calling thread.

Judge failures raise (`JudgeCallError`, `VerdictParseError`, ...) unless `on_judge_error="rule"`, which keeps
the rule's score and reports the error in the `judge_error` extra. Every result has the same extra keys.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.guards import GuardSettings, GuardSettingsError, check_answer
from rewardfleet.reward_fns.judging.images import image_parts, with_images
from rewardfleet.reward_fns.judging.judge import (
    JudgeConfigError,
    JudgeEndpoint,
    ask_judge,
    read_verdict,
    template_values,
)
from rewardfleet.reward_fns.judging.settings import (
    GenerationSettings,
    JudgeSettingsError,
    VerdictSettings,
    settings_from,
)
from rewardfleet.reward_fns.judging.templates import JudgeTemplate, TemplateError, get_template
from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from rewardfleet.services.common.router_http import RemoteCallError, resolve_address

DATA_SOURCES: tuple[str, ...] = ()
BUILTINS = "rewardfleet.reward_fns"  # the package of the rule functions (this one is its judging/)

THREAD_SAFE_RULES = frozenset({"math_dapo", "math", "gsm8k"})


class RuleCheckError(RuntimeError):
    """The rule function cannot run here or returned something that is not a score."""


def rule_is_thread_safe(rule: str, rule_kwargs: Mapping[str, Any]) -> bool:
    if rule in THREAD_SAFE_RULES:
        return True
    # math_verify sets no signal.alarm when both of its timeouts are disabled.
    return rule == "math_verify" and all(
        key in rule_kwargs and rule_kwargs[key] is None for key in ("parsing_timeout_s", "verify_timeout_s")
    )


async def run_rule(
    rule: str,
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None,
    rule_kwargs: Mapping[str, Any],
) -> tuple[float, bool, str]:
    """(score, correct, pred) from `rewardfleet.reward_fns.<rule>.compute_score`."""
    try:
        module = importlib.import_module(f"{BUILTINS}.{rule}")
    except ImportError as exc:
        raise RuleCheckError(f"no built-in rule function {BUILTINS}.{rule}: {exc}") from exc
    fn = getattr(module, "compute_score", None)
    if fn is None or asyncio.iscoroutinefunction(fn):
        raise RuleCheckError(f"{__package__}.{rule} has no synchronous compute_score")
    kwargs = dict(data_source=data_source, solution_str=solution_str, ground_truth=ground_truth)
    if rule_is_thread_safe(rule, rule_kwargs):
        result = await asyncio.to_thread(fn, extra_info=extra_info, **kwargs, **rule_kwargs)
    elif threading.current_thread() is threading.main_thread():
        result = fn(extra_info=extra_info, **kwargs, **rule_kwargs)
    else:
        raise RuleCheckError(
            f"rule {rule!r} may use signal.alarm (math-verify), which fails outside the main thread; run the "
            "event loop in the main thread, or for math_verify pass rule_kwargs parsing_timeout_s=None and "
            "verify_timeout_s=None"
        )
    if isinstance(result, Mapping):
        if "score" not in result:
            raise RuleCheckError(f"rewardfleet.reward_fns.{rule} returned a dict without 'score'")
        score = float(result["score"])
        correct = bool(result["acc"]) if "acc" in result else score > 0
        pred = result.get("pred")
        return score, correct, "" if pred is None else str(pred)
    if isinstance(result, bool | int | float):
        return float(result), float(result) > 0, ""
    raise RuleCheckError(f"rewardfleet.reward_fns.{rule} returned {type(result).__name__}, not a score")


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    reward_model_tokenizer: Any = None,
    prompt: Any = None,
    images: Sequence[str] | None = None,
    uid: str | None = None,
    rule: str = "math_dapo",
    rule_kwargs: Mapping[str, Any] | None = None,
    pool: str = "judge",
    model: str = "default",
    template: str = "step_critique",
    timeout_s: float = 300.0,
    flaw_penalty: float = 1.0,
    skip_judge_splits: Sequence[str] = ("test",),
    on_judge_error: str = "raise",
    generation: GenerationSettings | Mapping[str, Any] | None = None,
    verdict: VerdictSettings | Mapping[str, Any] | None = None,
    guards: GuardSettings | Mapping[str, Any] | bool | None = None,
) -> dict[str, Any]:
    """{"score": rule score - (flaw_penalty if flawed), "rule_score", "acc", "pred", "judge_called",
    "is_flawed", "judge_verdict", "judge_response", "judge_error", "guard"}.

    `generation` defaults to max_tokens 4096 (step critiques reason at length), `verdict` to 2000 characters
    of reasoning; of `verdict`, only user_template, system_prompt, constrain and reasoning_chars apply."""
    tmpl, gen, ver, guard_settings = _settings(on_judge_error, template, generation, verdict, guards)

    rule_score, correct, pred = await run_rule(
        rule, data_source, solution_str, ground_truth, extra_info, rule_kwargs or {}
    )
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
    split = (extra_info or {}).get("split")
    if not correct or (split is not None and split in skip_judge_splits):
        return result

    tripped = check_answer(solution_str, guard_settings)
    if tripped is not None:
        # The rule passed an answer with nothing to review (too long, or only an opener around a boxed
        # answer the rule found): it is scored as a flawed one, never above what the judge could give.
        result.update(guard=tripped, is_flawed=True, score=rule_score - flaw_penalty)
        return result

    try:
        address = resolve_address(pool, router_addresses, reward_router_address)
    except ValueError as exc:
        raise JudgeConfigError(str(exc)) from exc
    endpoint = JudgeEndpoint(
        session=http_client,
        address=address,
        model=model,
        use_generate=gen.use_generate,
        tokenizer=reward_model_tokenizer,
        max_tokens=gen.max_tokens,
        temperature=gen.temperature,
        timeout_s=timeout_s,
        regex=verdict_regex(
            tmpl, scale_min=1.0, scale_max=10.0, max_tokens=gen.max_tokens,
            reasoning_chars=ver.reasoning_chars,
        )
        if ver.constrain
        else None,
        sampling_seed=gen.sampling_seed,
        seed_key=uid if gen.seed_uid else None,
    )  # fmt: skip
    values = template_values(solution_str, ground_truth, extra_info, prompt, None)
    try:
        messages = tmpl.render({k: v for k, v in values.items() if v is not None}, ver.system_prompt)
    except TemplateError as exc:
        raise JudgeConfigError(str(exc)) from exc
    shown = image_parts(images, prompt)  # a VLM judge sees the sample's images (_judge_images.py)
    if shown and gen.use_generate:
        raise JudgeConfigError("this sample has images; generation.use_generate cannot carry them")
    messages = with_images(list(messages), shown)
    result["judge_called"] = True
    try:
        reply = await ask_judge(endpoint, messages)
        verdict_read = read_verdict(reply, tmpl, 1.0, 10.0)
    except (RemoteCallError, VerdictParseError) as exc:
        if on_judge_error == "raise":
            raise
        result["judge_error"] = f"{type(exc).__name__}: {exc}"
        return result

    # step_index: -1 (no wrong step) scores 1; binary: "correct" scores 1. Anything else is a flaw.
    flawed = verdict_read.score < 1.0
    result.update(
        is_flawed=flawed,
        judge_verdict=str(verdict_read.value),
        judge_response=reply.text,
        score=rule_score - flaw_penalty if flawed else rule_score,
    )
    return result


GENERATION_DEFAULTS = GenerationSettings(max_tokens=4096)
VERDICT_DEFAULTS = VerdictSettings(reasoning_chars=2000)


def _settings(
    on_judge_error: str,
    template: str,
    generation: GenerationSettings | Mapping[str, Any] | None,
    verdict: VerdictSettings | Mapping[str, Any] | None,
    guards: GuardSettings | Mapping[str, Any] | bool | None,
) -> tuple[JudgeTemplate, GenerationSettings, VerdictSettings, GuardSettings]:
    if on_judge_error not in ("raise", "rule"):
        raise JudgeConfigError(f"on_judge_error must be 'raise' or 'rule', not {on_judge_error!r}")
    try:
        gen = settings_from(GenerationSettings, generation, "generation", GENERATION_DEFAULTS)
        ver = settings_from(VerdictSettings, verdict, "verdict", VERDICT_DEFAULTS)
        guard_settings = GuardSettings.coerce(guards)
        tmpl = get_template(template, user_template=ver.user_template)
    except (TemplateError, JudgeSettingsError, GuardSettingsError) as exc:
        raise JudgeConfigError(str(exc)) from exc
    if tmpl.verdict_kind not in ("step_index", "binary"):
        raise JudgeConfigError(
            f"the flaw judge needs a step_index or binary template, not {tmpl.verdict_kind}"
        )
    return tmpl, gen, ver, guard_settings


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """Check the settings groups (and guards) once at start-up, naming a misspelt or mistyped setting."""
    _settings(
        str(reward_kwargs.get("on_judge_error", "raise")),
        str(reward_kwargs.get("template", "step_critique")),
        reward_kwargs.get("generation"),
        reward_kwargs.get("verdict"),
        reward_kwargs.get("guards"),
    )
