"""Building the issue-9 features on top of the loaded reward functions, and holding them for the routes.

`build_functions` turns `load_functions`' table into the served one: functions with a `fallbacks` entry are
wrapped, every `graders` entry and every `composites` entry becomes an async function of its own name. All of
it is checked together; every problem is reported at once in a `LoadError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.gateway.config import GatewayConfig
from services.gateway.config.graders import GraderSpec
from services.gateway.core.registry import RewardFunction, check_signature
from services.gateway.core.scoring import Scorer
from services.gateway.core.versioning import spec_version
from services.gateway.errors import LoadError
from services.gateway.features.composites import make_composite, rebuild_request, synthetic_function
from services.gateway.features.fallbacks import with_fallback
from services.gateway.features.graders.runtime import GraderRuntime
from services.gateway.features.groups import GroupFunction, GroupScorer, load_group_functions


@dataclass
class Features:
    """What the graders, groups and admin routes need; the lifespan builds it, reload swaps its parts."""

    graders: GraderRuntime
    group_functions: dict[str, GroupFunction]
    groups: GroupScorer | None = None
    scorer: Scorer | None = None
    reloader: Any = None  # reload.Reloader
    extra: dict[str, Any] = field(default_factory=dict)

    def scorer_of(self) -> Scorer:
        if self.scorer is None:
            raise RuntimeError("the gateway is not started")
        return self.scorer


def _grader_timeout(spec: Any) -> float:
    return float(getattr(spec, "timeout_s", 30.0)) + 1.0 if spec.type != "multi" else 300.0


def _grader_function(name: str, spec: GraderSpec, runtime: GraderRuntime) -> RewardFunction:
    async def run(
        data_source: str,
        solution_str: str,
        ground_truth: Any,
        extra_info: Any,
        prompt: Any = None,
        uid: Any = None,
    ) -> dict[str, Any]:
        request = rebuild_request(data_source, solution_str, ground_truth, extra_info, prompt, uid)
        score, extra = await runtime.run(spec, request)
        return {"score": score, "grader_type": spec.type, **extra}

    return synthetic_function(name, run, "grader", spec_version(spec), _grader_timeout(spec), [])


def _with_kwargs(fn: RewardFunction, kwargs: dict[str, Any], where: str) -> RewardFunction:
    if not kwargs:
        return fn
    config = fn.config.model_copy(update={"reward_kwargs": {**fn.config.reward_kwargs, **kwargs}})
    if not fn.source_file.name.startswith("<"):  # a real function: its signature must take the kwargs
        try:
            check_signature(fn.fn, fn.is_async, config)
        except ValueError as exc:
            raise ValueError(f"{where}.kwargs: {exc}") from None
    return dataclasses.replace(fn, config=config, version=spec_version(config, [fn.version]))


def build_functions(
    config: GatewayConfig,
    loaded: dict[str, RewardFunction],
    graders: GraderRuntime,
    scorer_of: Callable[[], Scorer],
) -> dict[str, RewardFunction]:
    problems: list[str] = []
    functions = dict(loaded)

    for name, fspec in config.fallbacks.items():
        original, fallback = functions.get(name), functions.get(fspec.fn)
        if original is None:
            problems.append(f"fallbacks.{name}: no reward function named {name!r}")
        elif not original.is_async:
            problems.append(
                f"fallbacks.{name}: only async functions (model-pool callers) can have a fallback"
            )
        elif fallback is None:
            problems.append(f"fallbacks.{name}.fn: no reward function named {fspec.fn!r}")
        else:
            functions[name] = with_fallback(original, fallback, fspec, scorer_of)

    for name, gspec in config.graders.items():
        if not name.isidentifier():
            problems.append(f"graders: {name!r} is not a valid name (letters, digits, _)")
            continue
        if name in functions:
            problems.append(f"graders.{name}: a reward function already has that name")
            continue
        found = graders.problems(gspec, f"graders.{name}")
        if found:
            problems += found
            continue
        functions[name] = _grader_function(name, gspec, graders)

    for name, cspec in config.composites.items():
        if not name.isidentifier() or name in functions:
            problems.append(f"composites.{name}: invalid name, or a function or grader already has it")
            continue
        try:
            components = []
            for i, comp in enumerate(cspec.components):
                if comp.fn not in functions:
                    raise ValueError(f"components[{i}].fn: no reward function or grader named {comp.fn!r}")
                components.append(_with_kwargs(functions[comp.fn], comp.kwargs, f"components[{i}]"))
            gate = None
            if cspec.gate is not None:
                if cspec.gate.fn not in functions:
                    raise ValueError(f"gate.fn: no reward function or grader named {cspec.gate.fn!r}")
                gate = _with_kwargs(functions[cspec.gate.fn], cspec.gate.kwargs, "gate")
        except ValueError as exc:
            problems.append(f"composites.{name}.{exc}")
            continue
        functions[name] = make_composite(name, cspec, gate, components, scorer_of)

    if problems:
        raise LoadError("cannot build composites / graders / fallbacks:\n  " + "\n  ".join(problems))
    return functions


def build_features(
    config: GatewayConfig, loaded: dict[str, RewardFunction]
) -> tuple[Features, dict[str, Any]]:
    """Start-up: the served function table and the `Features` holder (its scorer is attached later)."""
    runtime = GraderRuntime(config.graders, config.routers, config.reward_router_address, None)
    features = Features(graders=runtime, group_functions=load_group_functions(config.groups))
    functions = build_functions(config, loaded, runtime, features.scorer_of)
    return features, functions


def attach(features: Features, config: GatewayConfig, scorer: Scorer, http_client: Any) -> None:
    features.scorer = scorer
    features.graders.http_client = http_client
    features.groups = GroupScorer(config.groups, features.group_functions, scorer)
