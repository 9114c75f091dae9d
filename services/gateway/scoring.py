"""Scoring one sample: dispatch, argument injection, the call under its timeout, and a typed result.

Async functions are awaited on the event loop under `asyncio.timeout`; sync functions go to the worker pool.
Whatever happens inside the function, the sample gets a result: `ok` with a score, or `error`/`timeout`
with `{type, message}` and a null score (or the function's `on_error_score`, flagged `fallback_score`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pebble

from services.gateway.admission import FunctionGate, estimate_tokens
from services.gateway.dispatch import Dispatcher
from services.gateway.failure_log import FailureLog
from services.gateway.idempotency import ResultCache
from services.gateway.limits import SampleLimits
from services.gateway.metrics import GatewayMetrics
from services.gateway.registry import RewardFunction
from services.gateway.results import InvalidReturn, normalise_return
from services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult, Timings
from services.gateway.workers import WorkerPool


@dataclass
class Injectables:
    """Values the gateway can inject by parameter name (besides the per-request `prompt` and `uid`)."""

    reward_router_address: str | None = None
    router_addresses: dict[str, str] = field(default_factory=dict)
    http_client: Any = None  # aiohttp.ClientSession, set by the app's lifespan
    reward_model_tokenizer: Any = None
    tokenizer_path: str | None = None


def _exit_description(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""


@dataclass
class _Outcome:
    status: str
    score: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    error: ErrorInfo | None = None
    queue_s: float | None = None
    compute_s: float = 0.0


class Scorer:
    def __init__(
        self,
        dispatcher: Dispatcher,
        pool: WorkerPool | None,
        metrics: GatewayMetrics,
        injectables: Injectables,
    ) -> None:
        self.dispatcher = dispatcher
        self.pool = pool
        self.metrics = metrics
        self.injectables = injectables
        # Reliability (issue 7), set by the app: result cache, per-function limits, input limits.
        self.cache: ResultCache | None = None
        self.gates: dict[str, FunctionGate] = {}
        self.limits: SampleLimits | None = None
        self.failures = FailureLog()

    def resolve(self, request: ScoreRequest) -> tuple[RewardFunction, str]:
        """Raises UnknownRewardFunction / Undispatchable (404), or an input-limit error, before any work."""
        if self.limits is not None:
            self.limits.check(request)
        return self.dispatcher.resolve(request.reward_fn, request.data_source)

    def build_kwargs(self, fn: RewardFunction, request: ScoreRequest) -> dict[str, Any]:
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
                "router_addresses": dict(inj.router_addresses),
                "prompt": request.prompt,
                "uid": request.uid,
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
        if fn.config.reward_kwargs:
            kwargs.update(fn.config.reward_kwargs)
        return kwargs

    async def score(self, request: ScoreRequest, fn: RewardFunction, label: str) -> ScoreResult:
        """Score one sample; with idempotency on, a duplicate is answered from the cache or a running call."""
        cache = self.cache
        if cache is not None:
            key = cache.key(request, fn)
            if key is not None:
                return await cache.run(key, request, lambda: self._score(request, fn, label))
        return await self._score(request, fn, label)

    async def _call(self, fn: RewardFunction, kwargs: dict[str, Any]) -> _Outcome:
        return await (self._call_async(fn, kwargs) if fn.is_async else self._call_sync(fn, kwargs))

    async def _score(self, request: ScoreRequest, fn: RewardFunction, label: str) -> ScoreResult:
        started = time.perf_counter()
        kwargs = self.build_kwargs(fn, request)
        gate = self.gates.get(fn.name) if self.gates else None
        if gate is None:
            outcome = await self._call(fn, kwargs)
        else:
            async with gate.hold(estimate_tokens(request.prompt, request.solution_str, request.ground_truth)):
                outcome = await self._call(fn, kwargs)
        total_s = time.perf_counter() - started
        self.metrics.observe_call(fn.name, label, outcome.status, outcome.compute_s, outcome.score)
        if outcome.status != "ok":
            error = outcome.error
            self.failures.sample_failed(
                reward_fn=fn.name,
                data_source=request.data_source,
                status=outcome.status,
                error_type=error.type if error else outcome.status,
                message=error.message if error else "",
                uid=request.uid,
            )
        score, fallback = outcome.score, False
        if outcome.status != "ok" and fn.config.on_error_score is not None:
            score, fallback = fn.config.on_error_score, True
        # model_construct: every field is built right here; validating them again is pure hot-path cost.
        return ScoreResult.model_construct(
            uid=request.uid,
            score=score,
            extra=outcome.extra,
            reward_fn=fn.name,
            data_source=request.data_source,
            status=outcome.status,
            error=outcome.error,
            fallback_score=fallback,
            timings=Timings.model_construct(
                queue_s=outcome.queue_s, compute_s=outcome.compute_s, total_s=total_s
            ),
            version=fn.version,
        )

    async def _call_async(self, fn: RewardFunction, kwargs: dict[str, Any]) -> _Outcome:
        timeout_s = fn.config.timeout_s
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):
                value = await fn.fn(**kwargs)
            score, extra = normalise_return(value)
        except TimeoutError:
            return _Outcome(
                "timeout",
                error=ErrorInfo(type="Timeout", message=f"{fn.name} did not finish within {timeout_s}s"),
                compute_s=time.perf_counter() - started,
            )
        except InvalidReturn as exc:
            return _Outcome(
                "error",
                error=ErrorInfo(type="InvalidReturn", message=str(exc)),
                compute_s=time.perf_counter() - started,
            )
        except Exception as exc:
            return _Outcome(
                "error",
                # A composite's failure carries its components' results (composite.py): keep them.
                extra=getattr(exc, "result_extra", None) or {},
                error=ErrorInfo(type=type(exc).__name__, message=f"{exc}{_where(exc)}"),
                compute_s=time.perf_counter() - started,
            )
        return _Outcome("ok", score=score, extra=extra, compute_s=time.perf_counter() - started)

    async def _call_sync(self, fn: RewardFunction, kwargs: dict[str, Any]) -> _Outcome:
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
            return _Outcome(
                "timeout",
                error=ErrorInfo(
                    type="Timeout",
                    message=f"{fn.name} did not finish within {timeout_s}s; worker killed and replaced",
                ),
                compute_s=time.monotonic() - submitted,
            )
        except pebble.ProcessExpired as exc:
            return _Outcome(
                "error",
                error=ErrorInfo(
                    type="WorkerCrashed",
                    message=f"the worker process running {fn.name} died ({_exit_description(exc.exitcode)}); "
                    "it was replaced",
                ),
                compute_s=time.monotonic() - submitted,
            )
        except Exception as exc:  # e.g. an argument that does not pickle
            return _Outcome(
                "error",
                error=ErrorInfo(type=type(exc).__name__, message=str(exc)),
                compute_s=time.monotonic() - submitted,
            )
        queue_s, compute_s = max(0.0, t_start - submitted), t_end - t_start
        if kind == "ok":
            score, extra = payload
            return _Outcome("ok", score=score, extra=extra, queue_s=queue_s, compute_s=compute_s)
        err_type, message = payload
        return _Outcome(
            "error", error=ErrorInfo(type=err_type, message=message), queue_s=queue_s, compute_s=compute_s
        )
