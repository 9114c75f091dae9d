"""`rule_then_judge`: a rule decides, an LLM judge checks the steps of a verified answer.

A rule decides, an LLM judge checks the steps of a rule-verified answer (FAPO; the judge family is
reward_fns/judging/)."""

from rewardfleet.reward_fns.judging.rule_gate import RuleCheckError, rule_is_thread_safe
from rewardfleet.reward_fns.judging.rule_then_judge import DATA_SOURCES, compute_score, startup_check

__all__ = ["DATA_SOURCES", "RuleCheckError", "compute_score", "rule_is_thread_safe", "startup_check"]
