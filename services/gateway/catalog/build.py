"""The catalog: everything a request can be scored by, built in one go over the loaded reward functions.

`build_catalog` turns `load_functions`' table into the served one: functions with a `fallbacks` entry are
wrapped, every `graders` entry and every `composites` entry becomes an async function of its own name, and
the group functions are loaded. It needs the complete `Scorer` (composites, fallbacks and graders score
through it), and it checks everything together: every problem is reported at once in a `LoadError`.
A hot reload (`reload.py`) builds a new catalog the same way and swaps it in whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.services.gateway.composites.composites import make_composite, synthetic_function
from rewardfleet.services.gateway.composites.fallbacks import with_fallback
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.core.config import FunctionConfig
from rewardfleet.services.gateway.core.dispatch import Dispatcher
from rewardfleet.services.gateway.core.registry import RewardFunction, check_signature
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.core.versioning import spec_version
from rewardfleet.services.gateway.errors import LoadError
from rewardfleet.services.gateway.graders.config import GraderSpec
from rewardfleet.services.gateway.graders.runtime import GraderRuntime
from rewardfleet.services.gateway.groups.scorer import GroupFunction, load_group_functions
from rewardfleet.services.gateway.pools.external_pools import GRADERS_CALLER, for_function
from rewardfleet.services.gateway.schemas import ScoreRequest

# A grader's call gets this much beyond its own limit, so the grader's own timeout error wins the race.
GRADER_TIMEOUT_MARGIN_S = 1.0
MAX_ADDRESS_SETS = 1024  # graders' address mappings kept (one per tenant and run label)


@dataclass(frozen=True)
class Catalog:
    """What the served requests are scored by; built together, swapped together (a request keeps the
    `RewardFunction` it resolved, so calls in flight finish on the catalog they started with)."""

    functions: dict[str, RewardFunction]
    dispatcher: Dispatcher
    group_functions: dict[str, GroupFunction]
    graders: GraderRuntime


def grader_function(name: str, spec: GraderSpec, runtime: GraderRuntime) -> RewardFunction:
    async def run(request: ScoreRequest, label: str, config: FunctionConfig) -> dict[str, Any]:
        score, extra = await runtime.run(spec, request)
        return {"score": score, "grader_type": spec.type, **extra}

    timeout_s = runtime.timeout_s(spec) + GRADER_TIMEOUT_MARGIN_S
    version = spec_version(spec, runtime.code_versions(spec))
    return synthetic_function(name, run, "grader", version, timeout_s, [])


def _with_kwargs(fn: RewardFunction, kwargs: dict[str, Any], where: str) -> RewardFunction:
    if not kwargs:
        return fn
    config = fn.config.model_copy(update={"reward_kwargs": {**fn.config.reward_kwargs, **kwargs}})
    if not fn.takes_request:  # a plain function: its signature must take the kwargs
        try:
            check_signature(fn.fn, fn.is_async, config)
        except ValueError as exc:
            raise ValueError(f"{where}.kwargs: {exc}") from None
    return dataclasses.replace(fn, config=config, version=spec_version(config, [fn.version]))


def _functions(
    config: GatewayConfig, loaded: dict[str, RewardFunction], graders: GraderRuntime, scorer: Scorer
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
            functions[name] = with_fallback(original, fallback, fspec, scorer)

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
        functions[name] = grader_function(name, gspec, graders)

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
        functions[name] = make_composite(name, cspec, gate, components, scorer)

    if problems:
        raise LoadError("cannot build composites / graders / fallbacks:\n  " + "\n  ".join(problems))
    return functions


def grader_addresses(scorer: Scorer) -> Callable[[], dict[str, str]]:
    """The graders' `router_addresses` at call time: the scorer's (per calling tenant with tenants, see
    tenants/pool_tokens.py), under the graders' function label; one mapping kept per distinct source."""
    made: dict[int, tuple[dict[str, str], dict[str, str]]] = {}

    def addresses() -> dict[str, str]:
        source = scorer.injectables.router_addresses
        hit = made.get(id(source))
        if hit is None or hit[0] is not source:
            if len(made) > MAX_ADDRESS_SETS:
                made.clear()
            hit = made[id(source)] = (source, for_function(source, GRADERS_CALLER))
        return hit[1]

    return addresses


def build_catalog(
    config: GatewayConfig,
    loaded: dict[str, RewardFunction],
    scorer: Scorer,
    http_client: aiohttp.ClientSession | None,
) -> Catalog:
    """The served catalog over `loaded` (see the module docstring); raises `LoadError`."""
    # Graders see the external pools too, under one function label for their budget and token metrics;
    # the addresses are read at each call (with tenants they name the calling tenant).
    graders = GraderRuntime(
        config.graders, grader_addresses(scorer), config.reward_router_address, http_client
    )
    group_functions = load_group_functions(config.groups)
    functions = _functions(config, loaded, graders, scorer)
    dispatcher = Dispatcher(functions, config.dispatch, config.default_reward_fn)
    return Catalog(functions, dispatcher, group_functions, graders)
