"""The `judge` built-in's settings: its reward_kwargs as given and as checked.

Its reward_kwargs as given (`JudgeKwargs`, flat, as in YAML) and what they mean once checked together
(`JudgeSettings`: the template found, each group as its object)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.guards import GuardSettings, GuardSettingsError
from rewardfleet.reward_fns.judging.settings import (
    GenerationSettings,
    JudgeSettingsError,
    ProbabilitySettings,
    VerdictSettings,
    settings_from,
)
from rewardfleet.reward_fns.judging.templates import JudgeTemplate, TemplateError, get_template

# verdict: the template's question, the model's verdict. answer_match: the response's final answer found and
# compared by rule (answer_match.py); the model only picks the final answer among the response's numbers, or
# gives its verdict on free text the rule cannot settle.
METHODS = ("verdict", "probability", "answer_match")


@dataclass(frozen=True)
class JudgeKwargs:
    """The judge's reward_kwargs (docs/remote_reward_fns.md has the table): the pool and model asked, the
    method and template, the call's timeout, and the settings groups (each an object or a mapping)."""

    pool: str = "judge"
    model: str = "default"
    method: str = "verdict"
    template: str | None = None
    timeout_s: float = 120.0
    generation: GenerationSettings | Mapping[str, Any] | None = None
    verdict: VerdictSettings | Mapping[str, Any] | None = None
    probability: ProbabilitySettings | Mapping[str, Any] | None = None
    guards: GuardSettings | Mapping[str, Any] | bool | None = None


@dataclass(frozen=True)
class JudgeSettings:
    """Every setting of one `judge` configuration, checked together (at start-up and at each call)."""

    method: str
    template: JudgeTemplate
    generation: GenerationSettings
    verdict: VerdictSettings
    probability: ProbabilitySettings
    guards: GuardSettings
    pool: str = "judge"
    model: str = "default"
    timeout_s: float = 120.0

    @classmethod
    def build(cls, given: JudgeKwargs) -> JudgeSettings:
        method = given.method
        if method not in METHODS:
            raise JudgeConfigError(f"method must be one of {list(METHODS)}, not {method!r}")
        check_timeout(given.timeout_s)
        try:
            gen = settings_from(GenerationSettings, given.generation, "generation")
            ver = settings_from(VerdictSettings, given.verdict, "verdict")
            prob = settings_from(ProbabilitySettings, given.probability, "probability")
            guard = GuardSettings.coerce(given.guards)
            default = "correctness_yes_no" if method == "probability" else "correctness"
            tmpl = get_template(
                given.template or default, user_template=ver.user_template, verdict_kind=ver.verdict_kind
            )
        except (TemplateError, JudgeSettingsError, GuardSettingsError) as exc:
            raise JudgeConfigError(str(exc)) from exc
        if method == "probability":
            if tmpl.verdict_kind != "binary":
                raise JudgeConfigError(
                    f"method probability needs a yes/no (binary) template, not {tmpl.verdict_kind}"
                )
            if not prob.score_server_address:
                raise JudgeConfigError(
                    "method probability needs reward_kwargs probability.score_server_address (the judge "
                    "pool's model servers, host:port or a list: the router does not proxy /v1/score)"
                )
        elif given.probability is not None:
            raise JudgeConfigError(
                f"probability settings are given but method is {method!r}, not 'probability'"
            )
        return cls(method, tmpl, gen, ver, prob, guard, given.pool, given.model, given.timeout_s)


def check_timeout(timeout_s: float) -> None:
    if not timeout_s > 0:
        raise JudgeConfigError(f"timeout_s must be > 0, not {timeout_s!r}")
