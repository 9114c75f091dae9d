"""Composed rewards: `composites.<name>` runs a gate, then its weighted components, and reports each one.

A composite is an async `RewardFunction` built at load time, so dispatch, timeouts, metrics and versions treat
it like any function. Its components are the `RewardFunction` objects of the same load: a hot reload never
mixes versions inside one composite call.

Components and gate are scored with the request itself (every field, `reward_fn` and the group fields
included), through the same `Scorer` as any sample: their own timeouts, limits, cache and metrics.

Errors: with `on_component_error: fail` (the default) a failed component (or gate) fails the composite with
`ComponentFailed` (`error.type` "CompositeComponentFailed"), whose `result_extra` still lists every
component; `skip` drops the failed components and renormalises the remaining weights (all failed → fail);
`score` counts a failure as `error_score`. A closed gate (score below `min_score`) gives `gate_closed_score`
without running components.

The result's `reward_components` hold each component's own (unweighted) score under its function's name
(`name_2`, ... for a function listed twice): the scored ones, and under `on_component_error: score` the
failed ones at `error_score`; a skipped component and a closed gate leave them out.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rewardfleet.services.gateway.composites.config import CompositeSpec
from rewardfleet.services.gateway.core.config import FunctionConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.core.versioning import spec_version
from rewardfleet.services.gateway.errors import ComponentFailed
from rewardfleet.services.gateway.execution.loader import FunctionRef
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult

FAILED = "CompositeComponentFailed"  # the failed composite's `error.type`
RequestFunction = Callable[[ScoreRequest, str, FunctionConfig], Awaitable[Any]]


def synthetic_function(
    name: str,
    fn: RequestFunction,
    kind: str,
    version: str,
    timeout_s: float,
    data_sources: list[str],
) -> RewardFunction:
    """A function built from config: async, called with the request itself (`takes_request`)."""
    return RewardFunction(
        name=name,
        ref=FunctionRef(f"<{kind}>", name),
        fn=fn,
        source_file=Path(f"<{kind} {name}>"),
        origin="config",
        is_async=True,
        declared=frozenset(),
        var_kwargs=False,
        data_sources=tuple(data_sources),
        version=version,
        config=FunctionConfig(timeout_s=timeout_s, data_sources=data_sources),
        takes_request=True,
    )


def _report(result: ScoreResult, fn: RewardFunction, weight: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "fn": fn.name,
        "status": result.status,
        "score": result.score,
        "version": fn.version,
        "extra": result.extra,
    }
    if weight is not None:
        out["weight"] = weight
    if result.error is not None:
        out["error"] = {"type": result.error.type, "message": result.error.message}
    return out


def component_names(components: list[RewardFunction]) -> list[str]:
    """One `reward_components` name per component: its function's name in the components' charset, made
    unique with `_2`, `_3`, ... in order."""
    names: list[str] = []
    for fn in components:
        base = re.sub(r"[^A-Za-z0-9_.:/-]", "_", fn.name)[:60] or "component"
        if base[0] in ".:/-":
            base = "_" + base[:59]
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return names


def make_composite(
    name: str,
    spec: CompositeSpec,
    gate: RewardFunction | None,
    components: list[RewardFunction],
    scorer: Scorer,
) -> RewardFunction:
    weights = [c.weight for c in spec.components]
    part_names = component_names(components)

    async def run(request: ScoreRequest, label: str, config: FunctionConfig) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if gate is not None and spec.gate is not None:
            gate_result = await scorer.score(request, gate, label)
            report = _report(gate_result, gate)
            report["min_score"] = spec.gate.min_score
            ok = gate_result.status == "ok" and gate_result.score is not None
            score = gate_result.score
            report["open"] = ok and score is not None and score >= spec.gate.min_score
            extra["gate"] = report
            if not ok and spec.on_component_error == "fail":
                raise ComponentFailed(FAILED, f"gate {gate.name} {gate_result.status}", extra)
            if not report["open"]:
                extra["components"] = []
                return {"score": spec.gate_closed_score, **extra}
        results = await asyncio.gather(*(scorer.score(request, fn, label) for fn in components))
        reports = [_report(r, fn, w) for r, fn, w in zip(results, components, weights, strict=True)]
        extra["components"] = reports
        failed = [r for r in results if r.status != "ok" or r.score is None]
        if failed and spec.on_component_error == "fail":
            names = ", ".join(f"{r.reward_fn} ({r.status})" for r in failed)
            raise ComponentFailed(FAILED, f"component(s) failed: {names}", extra)
        total = 0.0
        used_weight = 0.0
        parts: dict[str, float] = {}
        for result, weight, report, part in zip(results, weights, reports, part_names, strict=True):
            if result.status == "ok" and result.score is not None:
                total += weight * result.score
                used_weight += weight
                parts[part] = result.score
            elif spec.on_component_error == "score":
                report["counted_as"] = spec.error_score
                total += weight * spec.error_score
                used_weight += weight
                parts[part] = spec.error_score
            else:
                report["skipped"] = True
        if spec.on_component_error == "skip" and failed:
            if used_weight == 0.0:
                raise ComponentFailed(FAILED, "every component failed (on_component_error: skip)", extra)
            total *= sum(weights) / used_weight  # renormalise onto the full weight
        return {"score": total, **extra, "reward_components": parts}

    deps = [fn.version for fn in components] + ([gate.version] if gate is not None else [])
    return synthetic_function(
        name, run, "composite", spec_version(spec, deps), spec.timeout_s, spec.data_sources
    )
