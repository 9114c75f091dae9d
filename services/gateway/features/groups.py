"""Group-wise scoring: samples with `group_id` + `group_size` are scored on arrival and answered together.

Each member's per-sample score starts as soon as it arrives. When `group_size` distinct members are in and
scored, the group function (if any) runs once over the group and every waiting request gets its final score,
with the per-sample result in `extra.sample_score` and `extra.group`. A group still incomplete `timeout_s`
after its first member answers every member with `status: "group_timeout"` (score null, per-sample score in
extra).

Members are told apart by `group_index` when given, else by `uid`. A second post of a member already in the
group (a client retry) does not score again: it waits for, and gets, the same answer. Finished groups are
remembered (bounded) so a retry arriving after the answer gets it too. At most `max_open_groups` groups are
open; beyond that a new group is refused with 503, so memory stays bounded.

Group functions: modules of `groups.builtin_package` (default `rewardfleet.reward_fns.groups`) defining
`compute_group_score(samples, scores, **kwargs)`, plus `groups.functions.<name>.path` entries. Async ones are
awaited, sync ones run in a thread; both under the entry's `timeout_s`.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import pkgutil
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardfleet.services.gateway.config.features import GroupFunctionConfig, GroupsConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.core.versioning import function_version
from rewardfleet.services.gateway.errors import GroupRequestError, InvalidReturn, LoadError, TooManyOpenGroups
from rewardfleet.services.gateway.execution.contain import UserCodeExit, awaited, in_thread
from rewardfleet.services.gateway.execution.loader import load_module, resolve
from rewardfleet.services.gateway.execution.results import as_score
from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult

log = logging.getLogger(__name__)
GROUP_ENTRY_POINT = "compute_group_score"
MemberKey = tuple[str, str | int]


def group_digest(group_id: str | int) -> bytes:
    """What the group tables are keyed by (here and in Redis): a client's group_id is never a key itself.
    JSON first, so the string "1" and the integer 1 stay two groups."""
    return hashlib.blake2b(json.dumps(group_id).encode(), digest_size=16).digest()


@dataclass(frozen=True)
class GroupFunction:
    name: str
    fn: Callable[..., Any]
    is_async: bool
    kwargs: dict[str, Any]
    timeout_s: float
    version: str


def _load_group_function(
    name: str, path: str | None, module_name: str | None, cfg: GroupFunctionConfig
) -> GroupFunction:
    # One loader for all user code (execution/loader.py): an edited file is a new module after a reload.
    ref, module, fn = resolve(path if path is not None else f"{module_name or name}:{GROUP_ENTRY_POINT}")
    attr = ref.attr
    params = inspect.signature(fn).parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    missing = [p for p in ("samples", "scores") if p not in params]
    if missing:
        raise TypeError(f"{attr} must take {missing} by keyword")
    unknown = sorted(set(cfg.kwargs) - set(params))
    if unknown and not var_kw:
        raise TypeError(f"kwargs {unknown} are not parameters of {attr}")
    source = Path(inspect.getsourcefile(fn) or module.__file__ or "")
    return GroupFunction(
        name=name,
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn),
        kwargs=dict(cfg.kwargs),
        timeout_s=cfg.timeout_s,
        version=function_version(source, cfg),
    )


def load_group_functions(config: GroupsConfig) -> dict[str, GroupFunction]:
    problems: list[str] = []
    found: dict[str, GroupFunction] = {}
    if config.builtin_package:
        try:
            package = load_module(config.builtin_package, None)
        except Exception as exc:
            raise LoadError(
                f"groups.builtin_package {config.builtin_package!r} does not import: {exc}"
            ) from exc
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("_"):
                continue
            cfg = config.functions.get(info.name) or GroupFunctionConfig()
            try:
                found[info.name] = _load_group_function(
                    info.name, None, f"{config.builtin_package}.{info.name}", cfg
                )
            except Exception as exc:
                problems.append(f"group function {info.name}: {type(exc).__name__}: {exc}")
    for name, cfg in config.functions.items():
        if cfg.path is None:
            if name not in found:
                problems.append(f"groups.functions.{name}: no built-in group function {name!r} and no path")
            continue
        try:
            found[name] = _load_group_function(name, cfg.path, None, cfg)
        except Exception as exc:
            problems.append(f"groups.functions.{name}.path {cfg.path!r}: {type(exc).__name__}: {exc}")
    if config.default_group_fn is not None and config.default_group_fn not in found and not problems:
        problems.append(f"groups.default_group_fn: {config.default_group_fn!r} is not a group function")
    if problems:
        raise LoadError("cannot load group functions:\n  " + "\n  ".join(problems))
    return found


def group_fn_error(name: str, exc: Exception) -> ErrorInfo:
    """The error every member of a group gets when its group function fails."""
    raised = exc.type if isinstance(exc, UserCodeExit) else type(exc).__name__
    return ErrorInfo(type="GroupFunctionError", message=f"{name}: {raised}: {exc}")


def _name(fn: GroupFunction | None) -> str | None:
    return fn.name if fn is not None else None


@dataclass
class _Group:
    group_id: str | int
    key: bytes  # group_digest(group_id)
    size: int
    fn: GroupFunction | None
    members: dict[MemberKey, tuple[ScoreRequest, asyncio.Task[ScoreResult]]] = field(default_factory=dict)
    done: asyncio.Future[dict[MemberKey, ScoreResult]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    completing: bool = False
    timer: asyncio.TimerHandle | None = None


class GroupScorer:
    def __init__(self, config: GroupsConfig, scorer: Scorer) -> None:
        self.config = config
        self.scorer = scorer
        self._open: dict[bytes, _Group] = {}
        self._finished: OrderedDict[bytes, dict[MemberKey, ScoreResult]] = OrderedDict()
        self._background: set[asyncio.Task[Any]] = set()

    def _member_key(self, request: ScoreRequest) -> MemberKey:
        if request.group_size is None:
            raise GroupRequestError("group_id needs group_size")
        if request.group_size > self.config.max_group_size:
            raise GroupRequestError(f"group_size {request.group_size} is over max_group_size")
        if request.group_index is not None:
            if request.group_index >= request.group_size:
                raise GroupRequestError(f"group_index {request.group_index} is not below group_size")
            return ("index", request.group_index)
        if request.uid is None:
            raise GroupRequestError("a group member needs group_index or uid (to recognise a repeated post)")
        return ("uid", request.uid)

    def _group_fn(
        self, request: ScoreRequest, functions: Mapping[str, GroupFunction]
    ) -> GroupFunction | None:
        name = request.group_fn or self.config.default_group_fn
        if name is None:
            return None
        fn = functions.get(name)
        if fn is None:
            raise GroupRequestError(f"unknown group_fn {name!r}; available: {sorted(functions)}")
        return fn

    async def submit(
        self,
        request: ScoreRequest,
        fn: RewardFunction,
        label: str,
        functions: Mapping[str, GroupFunction],
    ) -> ScoreResult:
        """Score a group member and wait for its group's answer. `functions` are the group functions being
        served now (a group keeps the one it started with)."""
        key = self._member_key(request)
        gid = request.group_id
        if gid is None:
            raise GroupRequestError("not a group member: group_id is null")
        gkey = group_digest(gid)
        finished = self._finished.get(gkey)
        if finished is not None:
            if key in finished:
                return finished[key]
            raise GroupRequestError(
                f"group {gid!r} is already answered; {key[0]} {key[1]!r} is not one of it"
            )
        group = self._open.get(gkey)
        if group is None:
            if len(self._open) >= self.config.max_open_groups:
                raise TooManyOpenGroups(f"{len(self._open)} groups are open (max_open_groups); retry later")
            group = _Group(
                group_id=gid, key=gkey, size=request.group_size or 1, fn=self._group_fn(request, functions)
            )
            group.timer = asyncio.get_running_loop().call_later(self.config.timeout_s, self._expire, group)
            self._open[gkey] = group
        elif request.group_size != group.size:
            raise GroupRequestError(
                f"group {gid!r} has group_size {group.size}, this sample says {request.group_size}"
            )
        elif _name(self._group_fn(request, functions)) != _name(
            group.fn
        ):  # by name: a reload makes new objects
            raise GroupRequestError(f"group {gid!r} members name different group functions")
        if key not in group.members:
            if group.completing:
                raise GroupRequestError(f"group {gid!r} already has {group.size} members")
            task = asyncio.create_task(self.scorer.score(request, fn, label))
            group.members[key] = (request, task)
            if len(group.members) == group.size:
                group.completing = True
                self._spawn(self._complete(group))
        # shield: a client that goes away must not cancel the group's answer for the others.
        results = await asyncio.shield(group.done)
        return results[key]

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _close(self, group: _Group, results: dict[MemberKey, ScoreResult]) -> None:
        if group.timer is not None:
            group.timer.cancel()
        self._open.pop(group.key, None)
        if self.config.finished_groups_kept:
            self._finished[group.key] = results
            while len(self._finished) > self.config.finished_groups_kept:
                self._finished.popitem(last=False)
        if not group.done.done():
            group.done.set_result(results)

    def _expire(self, group: _Group) -> None:
        if not group.completing:
            group.completing = True
            self._spawn(self._answer_timeout(group))

    async def _answer_timeout(self, group: _Group) -> None:
        keys = list(group.members)
        per_sample = await asyncio.gather(*(task for _, task in group.members.values()))
        message = (
            f"group {group.group_id!r}: {len(keys)} of {group.size} members within {self.config.timeout_s}s"
        )
        results = {
            key: self._final(r, group, None, "group_timeout", ErrorInfo(type="GroupTimeout", message=message))
            for key, r in zip(keys, per_sample, strict=True)
        }
        self._close(group, results)

    async def _complete(self, group: _Group) -> None:
        keys = sorted(group.members, key=lambda k: (str(type(k[1])), k[1]))
        try:
            per_sample = await asyncio.gather(*(group.members[k][1] for k in keys))
            scores = [r.score if r.status == "ok" else None for r in per_sample]
            finals: list[float | None] = scores
            error: ErrorInfo | None = None
            if group.fn is not None:
                try:
                    finals = await self._run_group_fn(group.fn, [group.members[k][0] for k in keys], scores)
                except Exception as exc:
                    finals = [None] * len(keys)
                    error = group_fn_error(group.fn.name, exc)
            results = {}
            for key, result, final in zip(keys, per_sample, finals, strict=True):
                status = "error" if error is not None else result.status
                results[key] = self._final(result, group, final, status, error or result.error)
        except BaseException:
            if not group.done.done():
                group.done.set_exception(RuntimeError(f"group {group.group_id!r} could not be answered"))
            self._open.pop(group.key, None)
            raise
        self._close(group, results)

    async def _run_group_fn(
        self, gfn: GroupFunction, requests: list[ScoreRequest], scores: list[float | None]
    ) -> list[float | None]:
        samples = [
            {
                "uid": r.uid,
                "group_index": r.group_index,
                "data_source": r.data_source,
                "solution_str": r.solution_str,
                "ground_truth": r.ground_truth,
                "extra_info": r.extra_info,
                "prompt": r.prompt,
            }
            for r in requests
        ]
        async with asyncio.timeout(gfn.timeout_s):
            if gfn.is_async:
                value = await awaited(gfn.fn(samples=samples, scores=list(scores), **gfn.kwargs))
            else:
                value = await in_thread(gfn.fn, samples=samples, scores=list(scores), **gfn.kwargs)
        if not isinstance(value, (list, tuple)) or len(value) != len(scores):
            raise InvalidReturn(f"expected a list of {len(scores)} scores, got {type(value).__name__}")
        return [None if v is None else as_score(v, f"score {i}") for i, v in enumerate(value)]

    def _final(
        self, result: ScoreResult, group: _Group, score: float | None, status: str, error: ErrorInfo | None
    ) -> ScoreResult:
        extra = {
            **result.extra,
            "sample_score": result.score,
            "sample_status": result.status,
            "group": {
                "id": group.group_id,
                "size": group.size,
                "received": len(group.members),
                "fn": group.fn.name if group.fn else None,
                "fn_version": group.fn.version if group.fn else None,
            },
        }
        return result.model_copy(update={"score": score, "status": status, "error": error, "extra": extra})
