"""What a server that runs these functions relies on: the one public module the gateway imports from
reward_fns (never an underscore module, never a function's internals).

- the keywords a server injects into a reward function by parameter name (`INJECTABLE_PARAMS`; `http_client`
  only into async functions, it cannot cross a process boundary);
- step scores: their aggregation into one score and the check of a returned list (`aggregate`,
  `check_scores`, `StepError`; docs/trajectories.md);
- the sandbox slots' queue (`slot_queue`, `SlotQueue`): a server that orders waiting sandboxes itself (fair
  queuing across tenants) sets it for the request it serves;
- the judge's settings objects (`GenerationSettings`, `VerdictSettings`), for servers that call the judge
  themselves (declarative graders), and the guard names it reports.
"""

from __future__ import annotations

from rewardfleet.reward_fns._sandbox.slots import SlotQueue, slot_queue
from rewardfleet.reward_fns.judging.guards import GUARD_NAMES
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
    "check_scores",
    "slot_queue",
]
