"""The group scorer over a state backend's group store: in the process (memory_store.py), or shared in
Redis (redis_store.py)."""

from __future__ import annotations

from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.scorer import GroupScorer
from rewardfleet.services.gateway.state_store.base import StateBackend


def group_scorer_for(backend: StateBackend, config: GroupsConfig, scorer: Scorer) -> GroupScorer:
    if backend.redis is None:
        return GroupScorer(config, scorer)
    from rewardfleet.services.gateway.groups.redis_store import RedisGroupStore  # only with a Redis backend

    return GroupScorer(config, scorer, RedisGroupStore(backend.redis, config, backend.finished_keep_s))
