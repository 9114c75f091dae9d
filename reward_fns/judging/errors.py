"""The judge family's errors: a judge call that failed, a verdict cut off, and settings that cannot work.

None of them scores 0: the gateway reports each as a typed error for the sample."""

from __future__ import annotations

from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from rewardfleet.services.common.router_http import RemoteCallError


class JudgeCallError(RemoteCallError):
    """The judge's router or server did not answer with a usable 2xx (see `RemoteCallError.kind`)."""


class JudgeTruncatedError(VerdictParseError):
    """The judge hit its token limit (`finish_reason: length`) before stating a verdict."""


class JudgeConfigError(ValueError):
    """The reward_kwargs or the sample do not allow this judge call (missing tokenizer, address, field...)."""
