"""`judge`: an LLM judge scores the response in [0, 1].

An LLM judge scores the response in [0, 1] (the judge family is reward_fns/judging/;
docs/remote_reward_fns.md)."""

from rewardfleet.reward_fns.judging.errors import JudgeCallError, JudgeConfigError, JudgeTruncatedError
from rewardfleet.reward_fns.judging.judge import DATA_SOURCES, compute_score, startup_check

__all__ = [
    "DATA_SOURCES",
    "JudgeCallError",
    "JudgeConfigError",
    "JudgeTruncatedError",
    "compute_score",
    "startup_check",
]
