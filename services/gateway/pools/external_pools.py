"""External pools: OpenAI-compatible endpoints outside the fleet, used like a fleet pool.

Any OpenAI-compatible endpoint outside the fleet (a hosted API, vLLM, another team's server) used by `judge`
and the graders' `score_model` exactly like a fleet pool.

A reward function reaches a pool by the address it is given in `router_addresses`. For an external pool that
address points back at the gateway, `host:port/pools/<token>/<pool>/<function>`, and the gateway forwards the
call (`ExternalPool.forward`): it swaps in the provider's model name and the API key, keeps the function under
its RPM/TPM budget, backs off on 429 (`Retry-After`, `x-ratelimit-*`), and counts each answer's real `usage`
tokens per function and pool in `/metrics` (and, for a pool in `pool_prices`, its cost: spend/meter.py;
past the pool's `max_spend_usd` the gateway answers 402 `BudgetExhausted` instead of forwarding). So the key
never reaches reward-function code or worker processes, and a function needs no provider-specific code. The
random `<token>` (new at every start) is what lets the forwarding route skip the gateway's own API keys: only
addresses the gateway handed out work.

There is no router: the provider balances its own load.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry, Counter

from rewardfleet.services.common.router_http import redact_pool_tokens
from rewardfleet.services.gateway.errors import BudgetExhausted
from rewardfleet.services.gateway.limits.rate_limits import Budget, retry_delay_s
from rewardfleet.services.gateway.metrics import ExternalPoolMetrics
from rewardfleet.services.gateway.pools.config import ExternalPoolConfig
from rewardfleet.services.gateway.spend.meter import SpendMeter

logger = logging.getLogger(__name__)

# Stands for the calling function's name in a forwarding address until `for_function` fills it in.
FUNCTION_SLOT = "{function}"
# The caller name of the graders' runtime (catalog/build.py): the budget of inline `score_model` specs.
GRADERS_CALLER = "graders"

# The OpenAI-compatible routes a pool forwards (below its `base_url`, which ends in the API root `/v1`): what
# `judge`, `score_model` graders, `similarity` and `reward_model` post. Nothing else of the provider's API
# (files, fine-tuning, admin) is reachable through a forwarding address.
FORWARDED_ROUTES = frozenset({"chat/completions", "completions", "embeddings"})
# A pool with `api: vllm_pooling` is a vLLM server (a process reward model): only its pooling API, which vLLM
# serves at the server's root (`/pooling`, not below `/v1`).
POOLING_ROUTES = frozenset({"pooling"})

# SGLang-only request fields (constrained decoding) that OpenAI-style providers reject as unknown.
SGLANG_ONLY_FIELDS = ("regex", "ebnf", "json_schema")


@dataclass(frozen=True)
class Forwarded:
    status: int
    body: bytes
    content_type: str


@dataclass
class ExternalPool:
    name: str
    config: ExternalPoolConfig
    metrics: ExternalPoolMetrics
    api_key: str | None = field(default=None, repr=False)
    budgets: dict[str, Budget] = field(default_factory=dict)
    paused_until: float = 0.0  # `clock` time before which no request is sent (set by a 429)
    spend: SpendMeter | None = None
    clock: Callable[[], float] = time.monotonic  # the budgets' and the back-off's time (tests move it)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    # Wraps each function's new budget (tenants/: a fair queue in front of it); None: the budget as is.
    wrap_budget: Callable[[Budget], Any] | None = None

    @classmethod
    def from_config(
        cls,
        name: str,
        config: ExternalPoolConfig,
        metrics: ExternalPoolMetrics,
        spend: SpendMeter | None = None,
    ) -> ExternalPool:
        key = None
        if config.api_key_env:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise ValueError(
                    f"external_pools.{name}.api_key_env: environment variable {config.api_key_env} is not set"
                )
        return cls(name, config, metrics, key, spend=spend)

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = {**body, "model": self.config.model}
        if not self.config.constrained_decoding:
            for key in SGLANG_ONLY_FIELDS:
                payload.pop(key, None)
        return payload

    async def forward(
        self, session: aiohttp.ClientSession, function: str, path: str, body: dict[str, Any]
    ) -> Forwarded:
        """POST `body` to `base_url` + `path` for `function`, within its budget, backing off on 429."""
        budget = self.budgets.get(function)
        if budget is None:
            budget = Budget(self.config.rpm, self.config.tpm, self.clock, self.sleep)
            if self.wrap_budget is not None:
                budget = self.wrap_budget(budget)
            self.budgets[function] = budget
        url = f"{self.config.base_url}/{path.lstrip('/')}"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = self._payload(body)
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        if self.spend is not None:
            try:
                await self.spend.admit_pool(function, self.name)
            except BudgetExhausted as exc:
                # OpenAI's error shape, as the other refusals of the forwarding route.
                error = {"error": {"message": f"BudgetExhausted: {exc}", "type": "BudgetExhausted"}}
                return Forwarded(402, json.dumps(error).encode(), "application/json")
        for attempt in range(self.config.max_retries + 1):
            waited = await budget.acquire()
            pause = self.paused_until - self.clock()
            if pause > 0:
                await self.sleep(pause)
                waited += pause
            if waited > 0:
                self.metrics.budget_wait.labels(function, self.name).inc(waited)
            async with session.post(url, json=payload, headers=headers, timeout=timeout) as resp:
                data = await resp.read()
                status = resp.status
                content_type = resp.headers.get("content-type", "application/json")
                delay = retry_delay_s(resp.headers) if status in (429, 503) else None
            if status == 429:
                self.metrics.rate_limited.labels(function, self.name).inc()
            retryable = status == 429 or (status == 503 and delay is not None)
            if not retryable or attempt == self.config.max_retries:
                break
            wait = min(self.config.max_backoff_s, delay if delay is not None else 2.0**attempt)
            # One pool-wide pause: every function's next request waits too, as the provider asked.
            self.paused_until = max(self.paused_until, self.clock() + wait)
            logger.info(
                "pool %s: HTTP %d, retrying in %.2f s (attempt %d)", self.name, status, wait, attempt + 1
            )
        self.metrics.requests.labels(function, self.name, str(status)).inc()
        if 200 <= status < 300:
            usage = self._count_usage(function, budget, data)
            if usage is not None and self.spend is not None:
                await self.spend.charge(function, self.name, *usage)
        return Forwarded(status, data, content_type)

    def _count_usage(self, function: str, budget: Budget, data: bytes) -> tuple[int, int] | None:
        try:
            usage = json.loads(data).get("usage") or {}
            prompt = int(usage.get("prompt_tokens") or 0)
            completion = int(usage.get("completion_tokens") or 0)
        except (ValueError, AttributeError, TypeError):
            return None  # no usage reported: nothing to count
        if min(prompt, completion) < 0:
            return None
        self.metrics.tokens.labels(function, self.name, "prompt").inc(prompt)
        self.metrics.tokens.labels(function, self.name, "completion").inc(completion)
        budget.spend_tokens(prompt + completion)
        return prompt, completion


class ExternalPools:
    """Every external pool of a gateway, plus the secret path token of their forwarding addresses."""

    def __init__(
        self,
        configs: dict[str, ExternalPoolConfig],
        registry: CollectorRegistry,
        tokens: Counter | None = None,
        spend: SpendMeter | None = None,
    ) -> None:
        metrics = ExternalPoolMetrics(registry, tokens)
        self.pools = {
            name: ExternalPool.from_config(name, cfg, metrics, spend) for name, cfg in configs.items()
        }
        self.token = secrets.token_urlsafe(24)

    def addresses(self, gateway_address: str) -> dict[str, str]:
        """Pool -> forwarding address on this gateway, with `FUNCTION_SLOT` for the caller's name."""
        return {name: f"{gateway_address}/pools/{self.token}/{name}/{FUNCTION_SLOT}" for name in self.pools}

    def check_token(self, token: str) -> bool:
        return secrets.compare_digest(token.encode(), self.token.encode())


def forwarded_route(path: str, api: str = "openai") -> str | None:
    """The route of `FORWARDED_ROUTES` that `path` (as the server decoded it, `v1/` optional) names, or None;
    for an `api: vllm_pooling` pool, the route of `POOLING_ROUTES` (exactly `pooling`).
    Only an exact name passes: any `.`/`..`/empty segment, backslash or leftover `%` (double encoding) fails,
    so no spelling of a path reaches another of the provider's routes."""
    if api == "vllm_pooling":
        return path if path in POOLING_ROUTES else None
    route = path.removeprefix("v1/")
    return route if route in FORWARDED_ROUTES else None


def redact_token(text: str, token: str | None) -> str:
    """`text` as it may be shown or logged: every forwarding address's secret masked, and `token` (the
    gateway's own) wherever else it appears (a function's own error text may hold its address in any form)."""
    text = redact_pool_tokens(text)
    return text.replace(token, "<token>") if token else text


class RedactPoolTokens(logging.Filter):
    """On uvicorn's access log: a forwarded request's line shows `/pools/<token>/...`, never the secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_pool_tokens(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


ACCESS_LOGGER = "uvicorn.access"


def for_function(addresses: dict[str, str], function: str) -> dict[str, str]:
    """`router_addresses` as `function` gets them: forwarding addresses name it (budget, metrics)."""
    return {pool: address.replace(FUNCTION_SLOT, function) for pool, address in addresses.items()}
