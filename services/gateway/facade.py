"""`Gateway`: the objects the composition root (app.py) builds and the routes use, behind one facade."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass

import aiohttp
from starlette.datastructures import State

from rewardfleet.services.gateway.catalog.build import Catalog
from rewardfleet.services.gateway.catalog.reload import Reloader
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.groups.store_protocol import Groups
from rewardfleet.services.gateway.limits.input_limits import SampleLimits
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.monitors.probes import JudgeProber
from rewardfleet.services.gateway.monitors.shadow import ShadowJudge
from rewardfleet.services.gateway.pools.external_pools import ExternalPools
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from rewardfleet.services.gateway.spend.meter import SpendMeter


@dataclass
class Gateway:
    config: GatewayConfig
    metrics: GatewayMetrics
    http_client: aiohttp.ClientSession
    limits: SampleLimits
    scorer: Scorer
    groups: Groups  # in-process or fleet-wide (state_store/)
    reloader: Reloader  # owns the catalog being served
    external_pools: ExternalPools | None = None
    spend: SpendMeter | None = None
    prober: JudgeProber | None = None
    shadow: ShadowJudge | None = None
    sessions: Sessions | None = None  # environments/: the sessions every environment protocol calls
    ready: bool = False
    # tenants/: holds a request's samples in its tenant's quotas while they are scored (None: no tenants).
    admit: (
        Callable[[Sequence[tuple[ScoreRequest, RewardFunction]]], AbstractAsyncContextManager[None]] | None
    ) = None

    def admitted(
        self, samples: Sequence[tuple[ScoreRequest, RewardFunction]]
    ) -> AbstractAsyncContextManager[None]:
        return nullcontext() if self.admit is None else self.admit(samples)

    @property
    def catalog(self) -> Catalog:
        return self.reloader.catalog

    def resolve(self, sample: ScoreRequest, catalog: Catalog) -> tuple[RewardFunction, str]:
        """The function for `sample` and its data_source label; raises the input-limit errors (413/422) and
        UnknownRewardFunction / Undispatchable (404) before any work."""
        self.limits.check(sample)
        return catalog.dispatcher.resolve(sample.reward_fn, sample.data_source)

    def score(self, sample: ScoreRequest) -> Awaitable[ScoreResult]:
        """Resolve and score one sample; a group member waits for its group's answer (groups/scorer.py).
        Resolving raises at once; the awaitable returned is the scorer's own, not a coroutine of this
        method around it (a frame less held by each post in flight, issue 44)."""
        catalog = self.catalog  # one catalog for the whole request, even if a reload swaps it meanwhile
        self.limits.check(sample)
        fn, label = catalog.dispatcher.resolve(sample.reward_fn, sample.data_source)
        if self.admit is not None:  # tenants: the sample holds its place in its tenant's quotas
            return self.score_resolved(sample, fn, label, catalog)
        if sample.group_id is not None:  # as score_resolved, inline: the hot path of one sample
            return self.groups.submit(sample, fn, label, catalog.group_functions)
        return self.scorer.score(sample, fn, label)

    async def score_resolved(
        self, sample: ScoreRequest, fn: RewardFunction, label: str, catalog: Catalog
    ) -> ScoreResult:
        if self.admit is not None:
            async with self.admit([(sample, fn)]):
                return await self._score_resolved(sample, fn, label, catalog)
        return await self._score_resolved(sample, fn, label, catalog)

    async def _score_resolved(
        self, sample: ScoreRequest, fn: RewardFunction, label: str, catalog: Catalog
    ) -> ScoreResult:
        if sample.group_id is not None:
            return await self.groups.submit(sample, fn, label, catalog.group_functions)
        return await self.scorer.score(sample, fn, label)


def gateway_of(state: State) -> Gateway:
    """The gateway in the app's `state`, set by the lifespan."""
    gateway: Gateway | None = getattr(state, "gateway", None)
    if gateway is None:  # only possible if a request slips in before start-up finished
        raise RuntimeError("the gateway is not started")
    return gateway
