"""Judge fallback: when an async function's model pool cannot answer, another function scores the sample.

`fallbacks.<fn>: {fn: <fallback>, on: [circuit_open, unreachable, timeout]}` wraps `<fn>` at load time. The
wrapper runs the original under its own `timeout_s`; if the call times out or raises a `RemoteCallError` whose
kind matches `on` (HTTP 503 from the router = `circuit_open`; refused / dropped connection or 502 =
`unreachable`; client timeout or 504 = `timeout`), the fallback scores the sample and the answer's extra
carries `fallback: {"from", "fn", "reason", "error", "version"}`; a failed fallback is `ComponentFailed`
(`error.type` "FallbackFailed"). Any other error (a verdict that does not
parse, a 4xx) stays the original's own error: a fallback must not hide a broken judge prompt.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from rewardfleet.services.common.router_http import RemoteCallError
from rewardfleet.services.gateway.composites.config import FallbackReason, FallbackSpec
from rewardfleet.services.gateway.core.config import FunctionConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.core.versioning import spec_version
from rewardfleet.services.gateway.errors import ComponentFailed
from rewardfleet.services.gateway.schemas import ScoreRequest

_STATUS_REASONS: dict[int, FallbackReason] = {503: "circuit_open", 502: "unreachable", 504: "timeout"}
_KIND_REASONS: dict[str, FallbackReason] = {
    "connect": "unreachable",
    "transport": "unreachable",
    "timeout": "timeout",
}


def classify(exc: BaseException) -> FallbackReason | None:
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, RemoteCallError):
        if exc.kind == "http_status" and exc.status is not None:
            return _STATUS_REASONS.get(exc.status)
        return _KIND_REASONS.get(exc.kind)
    return None


def with_fallback(
    original: RewardFunction, fallback: RewardFunction, spec: FallbackSpec, scorer: Scorer
) -> RewardFunction:
    async def run(request: ScoreRequest, label: str, config: FunctionConfig) -> Any:
        try:
            async with asyncio.timeout(original.config.timeout_s):
                # `config`: this entry's, whose reward_kwargs a composite component may have extended.
                return await original.fn(**scorer.build_kwargs(original, request, config))
        except Exception as exc:
            reason = classify(exc)
            if reason is None or reason not in spec.on:
                raise
            error = str(exc) or f"no answer within {original.config.timeout_s}s"
        result = await scorer.score(request, fallback, label)
        flag = {"from": original.name, "fn": fallback.name, "reason": reason, "error": error}
        flag["version"] = fallback.version
        if result.status != "ok" or result.score is None:
            raise ComponentFailed(
                "FallbackFailed",
                f"{original.name} failed ({reason}) and its fallback {fallback.name} gave {result.status}",
                {"fallback": flag, "fallback_error": result.error.model_dump() if result.error else None},
            )
        return {"score": result.score, **result.extra, "fallback": flag}

    config = original.config.model_copy(
        update={"timeout_s": original.config.timeout_s + fallback.config.timeout_s + 1.0}
    )
    return dataclasses.replace(
        original,
        fn=run,
        config=config,
        version=spec_version(spec, [original.version, fallback.version]),
        takes_request=True,
    )
