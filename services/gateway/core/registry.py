"""Discovery and start-up checks: files and config entries in, checked `RewardFunction` objects out.

Load order (later wins, with a warning): the built-in package's modules (`reward_fns.<stem>`, imported as
package modules so they can import each other), then each user folder in order (files loaded by path under a
unique module name, never via `sys.path`; they import their folder's helpers by plain name, see
execution/dropin.py), then config entries with an explicit `path`. A file whose name starts with `_`, or that
defines no `compute_score`, is not a function.

Every problem found (a file that does not import, an impossible signature, a config entry naming nothing)
is collected; with `on_load_error: fail` they stop start-up together in one `LoadError`, with `skip` each is
logged as a warning and the function is left out. A module's optional `startup_check(reward_kwargs)` is run
once per function at load (see `_run_startup_check`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rewardfleet.reward_fns.contract import ASYNC_ONLY_PARAMS, INJECTABLE_PARAMS, check_reward_kwargs
from rewardfleet.services.gateway.core.config import BASE_PARAMS, FunctionConfig, FunctionSources
from rewardfleet.services.gateway.core.versioning import digest, function_version
from rewardfleet.services.gateway.errors import LoadError
from rewardfleet.services.gateway.execution.dropin import folder_digest
from rewardfleet.services.gateway.execution.loader import FunctionRef, file_ref, load_module, resolve

logger = logging.getLogger(__name__)

# The arguments injected by parameter name are the reward functions' contract (reward_fns/contract.py).
ENTRY_POINT = "compute_score"

Origin = Literal["builtin", "user", "config"]


@dataclass(frozen=True)
class StartupCheck:
    """What a function's `startup_check` said at load: passed (with what it returned, if a string) or
    failed (the exception). `/ready` and `rewardfleet status` show it (for `code`: the missing setting)."""

    ok: bool
    detail: str | None = None


@dataclass(frozen=True)
class RewardFunction:
    name: str
    ref: FunctionRef
    fn: Callable[..., Any]
    source_file: Path
    origin: Origin
    is_async: bool
    declared: frozenset[str]  # injectable names in the signature: always passed (None when unavailable)
    var_kwargs: bool  # has **kwargs: also gets every injectable name that has a value
    data_sources: tuple[str, ...]
    version: str
    config: FunctionConfig
    # Built from config (composites, graders, fallbacks): called as `await fn(request, label, config)` with
    # the request itself (every field of it), the data_source metric label and this entry's config (its
    # reward_kwargs may differ per composite component), instead of verl's keywords.
    takes_request: bool = False
    startup_check: StartupCheck | None = None

    @property
    def injected_params(self) -> list[str]:
        """The injectable names this function can receive."""
        if not self.var_kwargs:
            return [p for p in INJECTABLE_PARAMS if p in self.declared]
        return [p for p in INJECTABLE_PARAMS if self.is_async or p not in ASYNC_ONLY_PARAMS]


@dataclass
class _Candidate:
    name: str
    ref: FunctionRef
    fn: Callable[..., Any]
    source_file: Path
    origin: Origin
    module_claims: tuple[str, ...]


class _Problems:
    def __init__(self, on_load_error: str) -> None:
        self.on_load_error = on_load_error
        self.items: list[str] = []

    def add(self, message: str) -> None:
        if self.on_load_error == "skip":
            logger.warning("SKIPPED reward function: %s", message)
        self.items.append(message)

    def raise_if_failing(self) -> None:
        if self.items and self.on_load_error == "fail":
            raise LoadError("cannot load reward functions:\n  " + "\n  ".join(self.items))


def is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _module_claims(module: Any) -> tuple[str, ...]:
    claims = getattr(module, "DATA_SOURCES", ())
    if (
        isinstance(claims, str)
        or not isinstance(claims, (tuple, list))
        or not all(isinstance(c, str) for c in claims)
    ):
        raise ValueError(f"DATA_SOURCES must be a tuple of strings, got {claims!r}")
    return tuple(claims)


def _function_files(folder: Path) -> Iterable[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def check_signature(
    fn: Callable[..., Any], is_async: bool, cfg: FunctionConfig
) -> tuple[frozenset[str], bool]:
    """Returns (declared injectable names, has **kwargs) or raises ValueError describing why the gateway could
    never call this function."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot read the signature of {ENTRY_POINT}: {exc}") from exc
    params = list(sig.parameters.values())
    var_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    keyword_names = {
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    injectable = set(INJECTABLE_PARAMS) - (set() if is_async else ASYNC_ONLY_PARAMS)
    provided = set(BASE_PARAMS) | injectable | set(cfg.reward_kwargs)
    problems: list[str] = []
    positional_only = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    if positional_only:
        problems.append(
            f"parameters {positional_only} are positional-only; reward functions are called by keyword"
        )
    if not is_async and keyword_names & ASYNC_ONLY_PARAMS:
        problems.append(
            "a sync function cannot take 'http_client' (the shared aiohttp session lives on the event loop); "
            "make it 'async def'"
        )
    required_unknown = [
        p.name
        for p in params
        if p.name in keyword_names
        and p.default is inspect.Parameter.empty
        and p.name not in provided
        and p.name not in ASYNC_ONLY_PARAMS
    ]
    if required_unknown:
        problems.append(
            f"required parameters {required_unknown} are provided by nobody (the gateway passes "
            f"{list(BASE_PARAMS)}, injects {sorted(injectable)} by name, plus this function's reward_kwargs)"
        )
    if not var_kwargs:
        missing = [b for b in BASE_PARAMS if b not in keyword_names and b not in positional_only]
        if missing:
            problems.append(
                f"does not accept {missing} (every call passes {list(BASE_PARAMS)}; add **kwargs)"
            )
    try:
        check_reward_kwargs(fn, cfg.reward_kwargs)  # unknown keys; declared keywords: also wrong types
    except ValueError as exc:
        problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    return frozenset(keyword_names & injectable), var_kwargs


def _discover(config: FunctionSources, problems: _Problems) -> dict[str, _Candidate]:
    found: dict[str, _Candidate] = {}

    def add(cand: _Candidate) -> None:
        if cand.name in found:
            logger.warning(
                "reward function %r from %s overrides the one from %s",
                cand.name,
                cand.source_file,
                found[cand.name].source_file,
            )
        found[cand.name] = cand

    if config.loading.builtin_package:
        try:
            package = load_module(config.loading.builtin_package, None)
            folder = Path(package.__file__ or "").parent
        except Exception as exc:
            raise LoadError(
                f"builtin_package {config.loading.builtin_package!r} does not import: {exc}"
            ) from exc
        for path in _function_files(folder):
            module_name = f"{config.loading.builtin_package}.{path.stem}"
            try:
                module = load_module(module_name, None)
                if not hasattr(module, ENTRY_POINT):
                    continue
                claims = _module_claims(module)
            except Exception as exc:
                problems.add(f"{path}: {type(exc).__name__}: {exc}")
                continue
            ref = FunctionRef(module_name, ENTRY_POINT)
            add(_Candidate(path.stem, ref, getattr(module, ENTRY_POINT), path, "builtin", claims))

    for folder in config.loading.reward_fns_dirs:
        for path in _function_files(folder):
            try:
                ref = file_ref(path, ENTRY_POINT, root=folder)
                module = load_module(ref.module, ref.file, ref.root)
                if not hasattr(module, ENTRY_POINT):
                    logger.info("%s defines no %s: not a reward function", path, ENTRY_POINT)
                    continue
                claims = _module_claims(module)
            except Exception as exc:
                problems.add(f"{path}: {type(exc).__name__}: {exc}")
                continue
            add(_Candidate(path.stem, ref, getattr(module, ENTRY_POINT), path, "user", claims))

    for name, cfg in config.functions.items():
        if cfg.path is None:
            if name not in found:
                problems.add(
                    f"functions.{name}: no reward-function file named {name}.py and no 'path' is given"
                )
            continue
        try:
            ref, module, fn = resolve(cfg.path)
            claims = _module_claims(module) if ref.attr == ENTRY_POINT else ()
            source = Path(inspect.getsourcefile(fn) or module.__file__ or ref.file or ref.module)
        except Exception as exc:
            problems.add(f"functions.{name}.path {cfg.path!r}: {type(exc).__name__}: {exc}")
            continue
        add(_Candidate(name, ref, fn, source, "config", claims))
    return found


def _run_startup_check(
    name: str, cand: _Candidate, cfg: FunctionConfig, config: FunctionSources, problems: _Problems
) -> StartupCheck | None:
    """A function's module may define `startup_check(reward_kwargs)`, raising when the function cannot work
    on this host (the `code` built-in: no sandbox can be created) and optionally returning a line saying
    what works. For a function the config names, a failure is a load problem; for one only discovered, an
    ERROR in the log and the function stays (its calls fail with their own typed error), so a host without,
    say, bubblewrap still serves everything else. None: the module has no check."""
    module = inspect.getmodule(cand.fn)
    check = getattr(module, "startup_check", None)
    if not callable(check):
        return None
    try:
        said = check(dict(cfg.reward_kwargs))
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        message = f"{cand.source_file}: {name}: start-up check failed: {detail}"
        if name in config.functions:
            problems.add(message)
        else:
            logger.error("%s", message)
        return StartupCheck(ok=False, detail=detail)
    said_line = said if isinstance(said, str) else None
    logger.info("%s: start-up check passed%s", name, f": {said_line}" if said_line else "")
    return StartupCheck(ok=True, detail=said_line)


def _version(cand: _Candidate, cfg: FunctionConfig) -> str:
    """The file and its config; for a drop-in folder's file also its helpers (a changed helper changes what
    the function computes, so cached results of the old version must not answer for the new one)."""
    version = function_version(cand.source_file, cfg)
    if cand.origin == "builtin":
        # A built-in that re-exports its compute_score (reward_fns/judge.py from judging/) is the file that
        # defines it: an edit there is another reward too.
        defined_in = getattr(inspect.getmodule(cand.fn), "__file__", None)
        if defined_in is not None and Path(defined_in) != cand.source_file:
            return digest(version.encode(), Path(defined_in).read_bytes())
    if cand.ref.root is None:
        return version
    return digest(version.encode(), folder_digest(Path(cand.ref.root)).encode())


def load_functions(config: FunctionSources) -> dict[str, RewardFunction]:
    """Discover, import and check every reward function; raise `LoadError` naming each bad file/key."""
    problems = _Problems(config.loading.on_load_error)
    functions: dict[str, RewardFunction] = {}
    for name, cand in _discover(config, problems).items():
        cfg = config.function_config(name)
        is_async = is_async_callable(cand.fn)
        try:
            declared, var_kwargs = check_signature(cand.fn, is_async, cfg)
        except ValueError as exc:
            problems.add(f"{cand.source_file}: {name}: {exc}")
            continue
        startup = _run_startup_check(name, cand, cfg, config, problems)
        if startup is not None and not startup.ok and name in config.functions:
            continue
        claims = tuple(dict.fromkeys([*cand.module_claims, *cfg.data_sources]))
        functions[name] = RewardFunction(
            name=name,
            ref=cand.ref,
            fn=cand.fn,
            source_file=cand.source_file,
            origin=cand.origin,
            is_async=is_async,
            declared=declared,
            var_kwargs=var_kwargs,
            data_sources=claims,
            version=_version(cand, cfg),
            config=cfg,
            startup_check=startup,
        )
    for data_source, target in config.dispatch.items():
        if target not in functions:
            problems.add(
                f"dispatch.{data_source}: {target!r} is not a loaded reward function ({sorted(functions)})"
            )
    if config.default_reward_fn is not None and config.default_reward_fn not in functions:
        problems.add(f"default_reward_fn: {config.default_reward_fn!r} is not a loaded reward function")
    problems.raise_if_failing()
    return functions
