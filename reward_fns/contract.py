"""What a server that runs these functions relies on: the one module the gateway imports.

The one public module the gateway imports from reward_fns (never an underscore module, never a function's
internals).

- the keywords a server injects into a reward function by parameter name (`INJECTABLE_PARAMS`; `http_client`
  only into async functions, it cannot cross a process boundary);
- step scores: their aggregation into one score and the check of a returned list (`aggregate`,
  `check_scores`, `StepError`; docs/trajectories.md);
- the sandbox slots' queue (`slot_queue`, `SlotQueue`): a server that orders waiting sandboxes itself (fair
  queuing across tenants) sets it for the request it serves;
- the judge's settings objects (`GenerationSettings`, `VerdictSettings`), for servers that call the judge
  themselves (declarative graders), and the guard names it reports;
- the load-time check of a function's config `reward_kwargs` (`check_reward_kwargs`): by its parameters, or
  for a function that declares its keywords with settings objects (the judges, `judging/keywords.py`) by
  those, which also refuse a value of the wrong type.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rewardfleet.reward_fns._sandbox.slots import SlotQueue, slot_queue
from rewardfleet.reward_fns.judging.guards import GUARD_NAMES
from rewardfleet.reward_fns.judging.keywords import ATTRIBUTE, Keywords
from rewardfleet.reward_fns.judging.settings import GenerationSettings, VerdictSettings
from rewardfleet.reward_fns.judging.steps import AGGREGATES, StepError, aggregate, check_scores

INJECTABLE_PARAMS: tuple[str, ...] = (
    "reward_router_address",
    "reward_model_tokenizer",
    "router_addresses",
    "http_client",
    "prompt",
    "uid",
    "images",
    "messages",
)
ASYNC_ONLY_PARAMS = frozenset({"http_client"})

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def check_reward_kwargs(fn: Callable[..., Any], reward_kwargs: Mapping[str, Any]) -> None:
    """Raise ValueError naming a reward_kwargs key `fn` cannot take, or (for declared keywords) the key whose
    value has the wrong type. A function with an undeclared **kwargs takes any key."""
    declared = getattr(fn, ATTRIBUTE, None)
    if isinstance(declared, Keywords):
        declared.check(reward_kwargs)
        return
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    unknown = sorted(set(reward_kwargs) - {p.name for p in params if p.kind in _KEYWORD_KINDS})
    if unknown:
        raise ValueError(f"reward_kwargs {unknown} are not parameters of the function and it has no **kwargs")


__all__ = [
    "AGGREGATES",
    "ASYNC_ONLY_PARAMS",
    "GUARD_NAMES",
    "INJECTABLE_PARAMS",
    "GenerationSettings",
    "SlotQueue",
    "StepError",
    "VerdictSettings",
    "aggregate",
    "check_reward_kwargs",
    "check_scores",
    "slot_queue",
]
