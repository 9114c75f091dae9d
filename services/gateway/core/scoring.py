"""Scoring one sample with its function, to a typed result.

Scoring one sample with its function: argument injection, per-function limits, the idempotency cache, the
call under its timeout, and a typed result (which function scores a sample is `dispatch.py`'s business).

Async functions are awaited on the event loop under `asyncio.timeout`; sync functions go to the worker pool.
Whatever happens inside the function, the sample gets a result: `ok` with a score, or `error`/`timeout`
with `{type, message}` and a null score (or the function's `on_error_score`, flagged `fallback_score`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp
import pebble
from pydantic import ValidationError

from rewardfleet.reward_fns.contract import StepError, aggregate
from rewardfleet.services.gateway.cache.idempotency import Results
from rewardfleet.services.gateway.core.config import FunctionConfig
from rewardfleet.services.gateway.core.failure_log import FailureLog
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.errors import BudgetExhausted, ComponentFailed, InvalidReturn
from rewardfleet.services.gateway.execution.contain import UserCodeExit, user_exit
from rewardfleet.services.gateway.execution.pool import WorkerPool
from rewardfleet.services.gateway.execution.results import error_location, extra_too_large, normalise_return
from rewardfleet.services.gateway.limits.function_limits import Gate, estimate_tokens, reported_tokens
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.pools.external_pools import for_function, redact_token
from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult, Timings
from rewardfleet.services.gateway.spend.meter import SpendMeter

# Error types of calls the gateway refused to make (no score of any kind, not even on_error_score).
REFUSALS = frozenset({"BudgetExhausted", "JudgePoolDegraded"})


@dataclass
class Injectables:
    """Values the gateway can inject by parameter name (besides the per-request `prompt` and `uid`)."""

    reward_router_address: str | None = None
    router_addresses: dict[str, str] = field(default_factory=dict)
    http_client: aiohttp.ClientSession | None = None
    reward_model_tokenizer: Any = None  # a transformers tokenizer (optional dependency)
    tokenizer_path: str | None = None
    # Pools behind the fleet's routers: a judge's reported tokens on them are counted here (external pools
    # count theirs as they forward, so those are not counted twice).
    fleet_pools: frozenset[str] = frozenset()
    # The secret of the external pools' forwarding addresses: masked in every error a sample gets or the log.
    pool_token: str | None = field(default=None, repr=False)


def _exit_description(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


@dataclass
class Outcome:
    status: str
    score: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    error: ErrorInfo | None = None
    queue_s: float | None = None
    compute_s: float = 0.0


def _aggregate_into_score(fn: RewardFunction, outcome: Outcome) -> None:
    """The score of a function that returned step/turn scores and no score: its `score_aggregate` of the
    step scores, else of the turn scores (results.normalise_return checked both lists); an empty list is
    an `EmptyScores` error, never a made-up number."""
    scores = outcome.extra.get("step_scores")
    if scores is None:
        scores = outcome.extra.get("turn_scores")
    cfg = fn.config
    try:
        outcome.score = aggregate(scores or [], cfg.score_aggregate, cfg.score_aggregate_threshold)
    except StepError as exc:
        outcome.status, outcome.score = "error", None
        outcome.error = ErrorInfo(type=type(exc).__name__, message=f"{fn.name}: {exc}")


def _result(**fields: Any) -> ScoreResult:
    """The result model from fields built by the scorer. Validation runs in pydantic-core and costs about
    half of `model_construct`'s Python loop over the fields (measured: ~16 vs ~34 us a result); a value it
    would not take as given (none is expected) is kept as it is, as `model_construct` always did."""
    try:
        return ScoreResult(**fields)
    except ValidationError:
        return ScoreResult.model_construct(**fields)


class Scorer:
    """Scores one sample with a given function. Built complete by the app (its cache and per-function gates
    included) before anything that scores through it: composites, fallbacks, graders and groups."""

    def __init__(
        self,
        pool: WorkerPool | None,
        metrics: GatewayMetrics,
        injectables: Injectables,
        cache: Results | None,
        gates: Mapping[str, Gate],
        max_result_extra_chars: int | None = None,
        spend: SpendMeter | None = None,
    ) -> None:
        self.pool = pool
        self.spend = spend
        # pool -> why its samples are refused (a degraded judge pool: monitors/probes.py sets and clears it)
        self.refused_pools: dict[str, str] = {}
        # called after each ok answer (monitors/shadow.py); must not block or raise
        self.on_scored: Callable[[RewardFunction, ScoreRequest, Outcome], None] | None = None
        self.metrics = metrics
        self.injectables = injectables
        self.cache = cache
        self.gates = dict(gates)
        self.max_result_extra_chars = max_result_extra_chars
        self.failures = FailureLog()

    async def _count_pool_tokens(self, function: str, extra: dict[str, Any]) -> None:
        """A judge's `usage` on a fleet pool, in `rewardfleet_pool_tokens_total` and, for a priced pool, in
        its spend (only pools the gateway routes to: the label stays bounded whatever a function returns)."""
        pool = extra.get("judge_pool")
        usage = extra.get("usage")
        if pool not in self.injectables.fleet_pools or not isinstance(usage, dict):
            return
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int) and min(prompt, completion) >= 0:
            self.metrics.count_pool_tokens(function, str(pool), prompt, completion)
            if self.spend is not None:
                await self.spend.charge(function, str(pool), prompt, completion)

    async def _admitted(self, fn: RewardFunction) -> Outcome | None:
        """None when `fn` may run, else its refusal: `JudgePoolDegraded` (monitors/probes.py) or
        `BudgetExhausted` (spend/meter.py)."""
        if self.refused_pools:
            why = self.refused_pools.get(fn.config.reward_kwargs.get("pool"))  # type: ignore[arg-type]
            if why is not None:
                return Outcome("error", error=ErrorInfo(type="JudgePoolDegraded", message=why))
        spend = self.spend
        if spend is None or (fn.config.max_spend_usd is None and not spend.has_pool_caps):
            return None  # no cap concerns this call (what `admit` would find without a ledger read)
        try:
            await spend.admit(fn.name, fn.config.max_spend_usd, fn.config.reward_kwargs.get("pool"))
        except BudgetExhausted as exc:
            return Outcome("error", error=ErrorInfo(type="BudgetExhausted", message=str(exc)))
        return None

    def build_kwargs(
        self, fn: RewardFunction, request: ScoreRequest, config: FunctionConfig | None = None
    ) -> dict[str, Any]:
        """verl's four arguments, the injectable ones `fn` asks for, and the reward_kwargs of `config`
        (default: the function's own)."""
        kwargs: dict[str, Any] = {
            "data_source": request.data_source,
            "solution_str": request.solution_str,
            "ground_truth": request.ground_truth,
            "extra_info": request.extra_info,
        }
        if fn.declared or fn.var_kwargs:
            inj = self.injectables
            available: dict[str, Any] = {
                "reward_router_address": inj.reward_router_address,
                "router_addresses": for_function(inj.router_addresses, fn.name),
                "prompt": request.prompt,
                "uid": request.uid,
                "images": request.images,
                "messages": request.messages,
            }
            if fn.is_async:
                available["http_client"] = inj.http_client
                available["reward_model_tokenizer"] = inj.reward_model_tokenizer
            for name in fn.declared:  # declared names are always passed, None when unavailable
                kwargs[name] = available.get(name)
            if fn.var_kwargs:  # **kwargs gets only what has a value
                for name, value in available.items():
                    if name not in kwargs and value is not None and value != {}:
                        kwargs[name] = value
        reward_kwargs = (config or fn.config).reward_kwargs
        if reward_kwargs:
            kwargs.update(reward_kwargs)
        return kwargs

    def score(self, request: ScoreRequest, fn: RewardFunction, label: str) -> Awaitable[ScoreResult]:
        """Score one sample; with idempotency on, a duplicate is answered from the cache or a running call.
        Returns the cache's or `_score`'s coroutine itself, not one of its own around it: each post in
        flight holds one frame less."""
        cache = self.cache
        if cache is not None:
            key = cache.key(request, fn.name, fn.version)
            if key is not None:
                return cache.run(key, request, partial(self._score, request, fn, label))
        return self._score(request, fn, label)

    async def run_unrecorded(self, fn: RewardFunction, request: ScoreRequest) -> Outcome:
        """One call for the gateway's own monitors (probes): no cache, gate or score metrics; its tokens
        and spend are counted like any call's, and spend caps apply."""
        outcome = None
        if self.spend is not None:
            try:
                await self.spend.admit(fn.name, fn.config.max_spend_usd, fn.config.reward_kwargs.get("pool"))
            except BudgetExhausted as exc:
                outcome = Outcome("error", error=ErrorInfo(type="BudgetExhausted", message=str(exc)))
        if outcome is None:
            outcome = await self._call(fn, request, request.data_source)
            await self._count_pool_tokens(fn.name, outcome.extra)
        return outcome

    def _call(self, fn: RewardFunction, request: ScoreRequest, label: str) -> Awaitable[Outcome]:
        """The call's own coroutine (a post in flight holds no frame of this method); an `ok`
        without a score gets its aggregate of step/turn scores there (`_aggregate_into_score`)."""
        if fn.is_async:
            return self._call_async(fn, request, label)
        return self._call_sync(fn, self.build_kwargs(fn, request))

    async def _score(self, request: ScoreRequest, fn: RewardFunction, label: str) -> ScoreResult:
        started = time.perf_counter()
        gate = self.gates.get(fn.name) if self.gates else None
        if gate is None:
            outcome = await self._admitted(fn) or await self._call(fn, request, label)
        else:
            async with gate.hold(
                estimate_tokens(request.prompt, request.solution_str, request.ground_truth)
            ) as charge:
                # checked once the gate lets the call through, so waiting calls see the latest spend
                outcome = await self._admitted(fn) or await self._call(fn, request, label)
                used = reported_tokens(outcome.extra)
                if used is not None:  # the judge said how many tokens it used: TPM counts those
                    charge.settle(used)
        total_s = time.perf_counter() - started
        outcome = self._bounded(fn, outcome)
        await self._count_pool_tokens(fn.name, outcome.extra)
        return self._answer(request, fn, label, outcome, total_s)

    # `_score`'s ends, out of its coroutine: a post in flight holds a smaller frame.
    def _bounded(self, fn: RewardFunction, outcome: Outcome) -> Outcome:
        """`outcome`, or a ResultTooLarge error when its extras are over max_result_extra_chars."""
        too_large = extra_too_large(outcome.extra, self.max_result_extra_chars)
        if too_large is None:
            return outcome
        return Outcome(  # an error result: logged, never cached, never sent
            "error",
            error=ErrorInfo(type="ResultTooLarge", message=f"{fn.name}: {too_large}"),
            queue_s=outcome.queue_s,
            compute_s=outcome.compute_s,
        )

    def _answer(
        self, request: ScoreRequest, fn: RewardFunction, label: str, outcome: Outcome, total_s: float
    ) -> ScoreResult:
        """The result of a finished call: counted, a failure logged, the fallback score applied."""
        if outcome.status == "ok" and self.on_scored is not None:
            self.on_scored(fn, request, outcome)
        self.metrics.observe_call(fn.name, label, outcome.status, outcome.compute_s, outcome.score)
        if outcome.status == "ok" and outcome.extra:
            self.metrics.judge_guard_hit(fn.name, outcome.extra)
        if outcome.status != "ok":
            error = outcome.error
            if error is not None:  # a judge's error names the URL it called: never the forwarding secret
                error = outcome.error = ErrorInfo(
                    type=error.type, message=redact_token(error.message, self.injectables.pool_token)
                )
            self.failures.sample_failed(
                reward_fn=fn.name,
                data_source=request.data_source,
                status=outcome.status,
                error_type=error.type if error else outcome.status,
                message=error.message if error else "",
                uid=request.uid,
            )
        score, fallback = outcome.score, False
        # A refusal is never turned into a score, not even a flagged fallback one.
        refused = outcome.error is not None and outcome.error.type in REFUSALS
        if outcome.status != "ok" and fn.config.on_error_score is not None and not refused:
            score, fallback = fn.config.on_error_score, True
        extra = outcome.extra
        step_scores = turn_scores = components = None
        if "step_scores" in extra or "turn_scores" in extra or "reward_components" in extra:
            extra = dict(extra)  # first-class in the result, not extras
            step_scores, turn_scores = extra.pop("step_scores", None), extra.pop("turn_scores", None)
            components = extra.pop("reward_components", None)
        return _result(
            uid=request.uid,
            score=score,
            step_scores=step_scores,
            turn_scores=turn_scores,
            reward_components=components,
            extra=extra,
            reward_fn=fn.name,
            data_source=request.data_source,
            status=outcome.status,
            error=outcome.error,
            fallback_score=fallback,
            timings=Timings(queue_s=outcome.queue_s, compute_s=outcome.compute_s, total_s=total_s),
            version=fn.version,
        )

    async def _call_async(self, fn: RewardFunction, request: ScoreRequest, label: str) -> Outcome:
        timeout_s = fn.config.timeout_s
        # Built-from-config functions (composites, graders, fallbacks) take the request itself.
        if fn.takes_request:
            call = fn.fn(request, label, fn.config)
        else:
            call = fn.fn(**self.build_kwargs(fn, request))
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):
                try:
                    value = await call
                except BaseException as exc:  # its SystemExit & co. fail this sample, not the loop
                    contained = user_exit(exc)  # (execution/contain.py; `awaited`, without its frame)
                    if contained is exc:
                        raise
                    raise contained from None
            score, extra = normalise_return(value)
        except TimeoutError:
            return Outcome(
                "timeout",
                error=ErrorInfo(type="Timeout", message=f"{fn.name} did not finish within {timeout_s}s"),
                compute_s=time.perf_counter() - started,
            )
        except InvalidReturn as exc:
            return Outcome(
                "error",
                error=ErrorInfo(type="InvalidReturn", message=str(exc)),
                compute_s=time.perf_counter() - started,
            )
        except UserCodeExit as exc:
            return Outcome(
                "error",
                error=ErrorInfo(type=exc.type, message=str(exc)),
                compute_s=time.perf_counter() - started,
            )
        except ComponentFailed as exc:  # keeps the components' reports (composites/)
            return Outcome(
                "error",
                extra=exc.result_extra,
                error=ErrorInfo(type=exc.type, message=str(exc)),
                compute_s=time.perf_counter() - started,
            )
        except Exception as exc:
            return Outcome(
                "error",
                error=ErrorInfo(type=type(exc).__name__, message=f"{exc}{error_location(exc)}"),
                compute_s=time.perf_counter() - started,
            )
        outcome = Outcome("ok", score=score, extra=extra, compute_s=time.perf_counter() - started)
        if score is None:
            _aggregate_into_score(fn, outcome)
        return outcome

    async def _call_sync(self, fn: RewardFunction, kwargs: dict[str, Any]) -> Outcome:
        if self.pool is None:
            raise RuntimeError("the worker pool is not running")
        timeout_s = fn.config.timeout_s
        tokenizer_path = None
        wants_tokenizer = "reward_model_tokenizer" in fn.declared or fn.var_kwargs
        if wants_tokenizer and self.injectables.tokenizer_path is not None:
            tokenizer_path = self.injectables.tokenizer_path
        submitted = time.monotonic()
        try:
            kind, payload, t_start, t_end = await self.pool.submit(fn.ref, kwargs, timeout_s, tokenizer_path)
        except concurrent.futures.TimeoutError:
            return Outcome(
                "timeout",
                error=ErrorInfo(
                    type="Timeout",
                    message=f"{fn.name} did not finish within {timeout_s}s; worker killed and replaced",
                ),
                compute_s=time.monotonic() - submitted,
            )
        except pebble.ProcessExpired as exc:
            return Outcome(
                "error",
                error=ErrorInfo(
                    type="WorkerCrashed",
                    message=f"the worker process running {fn.name} died ({_exit_description(exc.exitcode)}); "
                    "it was replaced",
                ),
                compute_s=time.monotonic() - submitted,
            )
        except Exception as exc:  # e.g. an argument that does not pickle
            return Outcome(
                "error",
                error=ErrorInfo(type=type(exc).__name__, message=str(exc)),
                compute_s=time.monotonic() - submitted,
            )
        queue_s, compute_s = max(0.0, t_start - submitted), t_end - t_start
        if kind == "ok":
            score, extra = payload
            outcome = Outcome("ok", score=score, extra=extra, queue_s=queue_s, compute_s=compute_s)
            if score is None:
                _aggregate_into_score(fn, outcome)
            return outcome
        err_type, message = payload
        return Outcome(
            "error", error=ErrorInfo(type=err_type, message=message), queue_s=queue_s, compute_s=compute_s
        )
