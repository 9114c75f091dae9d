"""The judge family: how a response is judged, shared by the judge built-ins (`judge`, `rule_then_judge`,
`step_judge`, `prm`, `reward_model`, ...).

judge            the LLM judge's `compute_score` (verdict, probability, answer_match; guards, images)
judge_settings   its reward_kwargs as given (`JudgeKwargs`) and checked together (`JudgeSettings`)
probability      probability mode: P(Yes) from the model servers' /v1/score
rule_then_judge  a rule first, the judge only for a rule-verified answer (FAPO)
rule_gate        the rule step of rule_then_judge: its settings (`RuleGate`) and running the rule
endpoint         asking a judge: `JudgeEndpoint`, `ask_judge` (chat or /generate), reading its verdict
context          what a server passes with each call (`JudgeContext`), made into an endpoint
keywords         flat reward_kwargs declared by settings dataclasses: the signature, the reading, the checks
errors           the family's errors (call failed, verdict truncated, bad settings)
settings         the judge's settings groups (generation, verdict, probability)
templates        judge prompt templates and chat rendering
verdicts         verdict kinds and their parsing; verdict_grammar: the constrained-decoding regex
guards           checks against answers crafted for the judge
images           images of a sample in the judge's chat
answer_match     comparing an extracted answer with the reference
reading          what the final answer says: number words, denials, hedges, self-corrections
seed             a judge call's sampling seed and routing key, from the question asked
answers          answer extraction and normalisation, shared with the rule built-ins; options: a sample's
                 per-call options
steps            step splitting, per-step scores and their aggregation
nemo_gym         what NeMo Gym's judge servers share (the message judged, the endpoint, the call's record)

The names below are its public API (the judge's `compute_score` is reward_fns.judge's, a built-in). The
judge itself is not imported here: importing a name of the family stays light.
"""

from rewardfleet.reward_fns.judging.guards import GUARD_NAMES, GuardSettings, GuardSettingsError, check_answer
from rewardfleet.reward_fns.judging.settings import (
    GenerationSettings,
    JudgeSettingsError,
    ProbabilitySettings,
    VerdictSettings,
)
from rewardfleet.reward_fns.judging.steps import StepError, aggregate, split_steps
from rewardfleet.reward_fns.judging.templates import JudgeTemplate, TemplateError, get_template
from rewardfleet.reward_fns.judging.verdicts import Verdict, VerdictParseError, parse_verdict

__all__ = [
    "GUARD_NAMES",
    "GenerationSettings",
    "GuardSettings",
    "GuardSettingsError",
    "JudgeSettingsError",
    "JudgeTemplate",
    "ProbabilitySettings",
    "StepError",
    "TemplateError",
    "Verdict",
    "VerdictParseError",
    "VerdictSettings",
    "aggregate",
    "check_answer",
    "get_template",
    "parse_verdict",
    "split_steps",
]
