"""Group-wise scoring: samples with `group_id` + `group_size` are scored on arrival and answered together.

Each member is scored as it arrives; once `group_size` members are in and scored, the group function runs
once and every waiting request gets its final score. A group still incomplete `timeout_s` after its first
member is partial (scored over the members present, or `group_timeout`); a retry gets the same answer, late
members are not scored, and at most `max_open_groups` are open (503 beyond). The logic is here, the state
in a `GroupStore` (groups/store_protocol.py: in process, or on Redis with `state_url`). Behaviour and the
completer design: docs/advanced_rewards.md ("Group-wise scoring", "How a group completes").
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.core.versioning import function_version
from rewardfleet.services.gateway.errors import (
    GroupAnswerLost,
    GroupRequestError,
    InvalidReturn,
    LoadError,
    StateStoreUnavailable,
    TooManyOpenGroups,
)
from rewardfleet.services.gateway.execution.contain import UserCodeExit, awaited, in_thread
from rewardfleet.services.gateway.execution.loader import load_module, resolve
from rewardfleet.services.gateway.execution.results import as_score
from rewardfleet.services.gateway.groups.config import GroupFunctionConfig, GroupsConfig
from rewardfleet.services.gateway.groups.memory_store import MemoryGroupStore, Timer
from rewardfleet.services.gateway.groups.store_protocol import GroupStore, Waiter, group_key
from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult, Timings

logger = logging.getLogger(__name__)
GROUP_ENTRY_POINT = "compute_group_score"
# What a group function may ask for by parameter name (a group judge calls a pool with them).
GROUP_INJECTABLE = ("router_addresses", "http_client")
MemberKey = tuple[str, str | int]


@dataclass(frozen=True)
class GroupFunction:
    name: str
    fn: Callable[..., Any]
    is_async: bool
    kwargs: dict[str, Any]
    timeout_s: float
    version: str
    score_partial: bool = True
    # GROUP_INJECTABLE names in the signature (http_client only for async functions): passed from the
    # gateway's injectables, as a reward function gets them.
    injected: tuple[str, ...] = ()


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
    is_async = inspect.iscoroutinefunction(fn)
    injected = tuple(p for p in GROUP_INJECTABLE if p in params and (is_async or p != "http_client"))
    return GroupFunction(
        name=name,
        fn=fn,
        is_async=is_async,
        kwargs=dict(cfg.kwargs),
        timeout_s=cfg.timeout_s,
        score_partial=cfg.score_partial,
        version=function_version(source, cfg),
        injected=injected,
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


@dataclass(frozen=True)
class MemberAnswer:
    """One member's result from a group function: a score, or a dict {"score", "extra", "error"}."""

    score: float | None
    extra: dict[str, Any] | None = None
    error: ErrorInfo | None = None


def member_answer(value: Any, index: int) -> MemberAnswer:
    """A group function returns per member a number or None, or a dict: `score` (number or None), optional
    `extra` (a dict merged into the member's extra) and optional `error` ({"type", "message"}: this member
    alone fails, typed, with score None)."""
    if not isinstance(value, Mapping):
        return MemberAnswer(None if value is None else as_score(value, f"score {index}"))
    unknown = sorted(set(value) - {"score", "extra", "error"})
    if unknown:
        raise InvalidReturn(f"member {index}: unknown keys {unknown}; expected score, extra, error")
    raw, extra, err = value.get("score"), value.get("extra"), value.get("error")
    if extra is not None and not isinstance(extra, Mapping):
        raise InvalidReturn(f"member {index}: extra must be a dict, not {type(extra).__name__}")
    error = None
    if err is not None:
        if not isinstance(err, Mapping) or not isinstance(err.get("type"), str):
            raise InvalidReturn(f"member {index}: error must be a dict with a type and a message")
        error = ErrorInfo(type=err["type"], message=str(err.get("message", "")))
    score = None if raw is None or error is not None else as_score(raw, f"score {index}")
    return MemberAnswer(score, dict(extra) if extra else None, error)


def group_fn_error(name: str, exc: Exception) -> ErrorInfo:
    """The error every member of a group gets when its group function fails."""
    raised = exc.type if isinstance(exc, UserCodeExit) else type(exc).__name__
    return ErrorInfo(type="GroupFunctionError", message=f"{name}: {raised}: {exc}")


COMPLETER_GRACE_S = 10.0  # a completer's lease: the group function's timeout plus this


@dataclass(frozen=True)
class GroupSpec:
    """One group as its members name it."""

    group_id: str | int
    key: str  # group_key(group_id): what the store knows the group by
    size: int
    fn: GroupFunction | None
    lease_s: float  # the completer's lease: the group function's timeout + COMPLETER_GRACE_S


def _member_order(member: str) -> tuple[str, Any]:
    key = json.loads(member)[1]
    return (str(type(key)), key)


def _presence(spec: GroupSpec, present: list[str], partial: bool) -> dict[str, Any]:
    """What every answer of a judged group says about who was in it. `members_missing`: the missing
    `group_index` values (members posted with `uid` only cannot be named: null)."""
    keys = [json.loads(m) for m in present]
    missing = None
    if all(kind == "index" for kind, _ in keys):
        missing = sorted(set(range(spec.size)) - {index for _, index in keys})
    return {
        "group_partial": partial,
        "members_present": len(present),
        "members_expected": spec.size,
        "members_missing": missing if partial else [],
    }


class GroupScorer:
    """The group logic over a `GroupStore` (groups/store_protocol.py): in-process by default, or fleet-wide
    (groups/redis_store.py), with the same answers."""

    def __init__(
        self,
        config: GroupsConfig,
        scorer: Scorer,
        store: GroupStore | None = None,
        timer: Timer | None = None,
    ) -> None:
        self.config = config
        self.scorer = scorer
        self.timer = timer  # what deadlines are read from; None: the running event loop
        self.store: GroupStore = store if store is not None else MemoryGroupStore(config, timer)
        self._background: set[asyncio.Task[Any]] = set()
        # The caller's namespace (tenants/: its tenant; "" without tenants): one tenant's group_id never
        # names another's group.
        self.namespace: Callable[[], str] = lambda: ""

    def _now(self) -> float:
        return (self.timer or asyncio.get_running_loop()).time()

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
        served now (a group keeps the one it started with, by name: a reload makes new objects)."""
        key = self._member_key(request)
        gid = request.group_id
        if gid is None:
            raise GroupRequestError("not a group member: group_id is null")
        gfn = self._group_fn(request, functions)
        size = request.group_size or 1
        lease_s = (gfn.timeout_s if gfn else 0.0) + COMPLETER_GRACE_S
        spec = GroupSpec(gid, group_key(gid, self.namespace()), size, gfn, lease_s)
        member = json.dumps(list(key))
        status, value = await self.store.join(spec.key, member, size, gfn.name if gfn else None)
        if status == "open_full":
            raise TooManyOpenGroups(f"{int(value)} groups are open (max_open_groups); retry later")
        if status == "size":
            raise GroupRequestError(f"group {gid!r} has group_size {int(value)}, this sample says {size}")
        if status == "fn":
            raise GroupRequestError(f"group {gid!r} members name different group functions")
        if status == "full":
            raise GroupRequestError(f"group {gid!r} already has {size} members")
        if status == "late":
            return self._late(request, fn, spec, int(value))
        if status == "answered" and not value:
            raise GroupRequestError(
                f"group {gid!r} is already answered; {key[0]} {key[1]!r} is not one of it"
            )
        deadline = self._now() + (value if status != "answered" else 0.0)
        if status == "new":
            task = asyncio.create_task(self._own(request, fn, label, spec, member, deadline))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved if nobody waits
            return await asyncio.shield(task)  # a client that goes away must not cancel the group's answer
        async with self.store.listen(spec.key) as waiter:
            return await self._wait(spec, member, deadline, waiter, None)

    async def _own(
        self,
        request: ScoreRequest,
        fn: RewardFunction,
        label: str,
        spec: GroupSpec,
        member: str,
        deadline: float,
    ) -> ScoreResult:
        """Score a new member, report it; complete the group if it was the last, else wait for the answer."""
        result = await self.scorer.score(request, fn, label)
        async with self.store.listen(spec.key) as waiter:
            state = await self.store.report(spec.key, member, request, result, spec.lease_s)
            if state == "complete":
                return (await self._complete(spec))[member]
            if not state:
                raise StateStoreUnavailable(
                    f"group {spec.group_id!r}: its state was lost (the store restarted?)"
                )
            return await self._wait(spec, member, deadline, waiter, result)

    async def _wait(
        self,
        spec: GroupSpec,
        member: str,
        deadline: float,
        waiter: Waiter,
        own: ScoreResult | None,
    ) -> ScoreResult:
        """Wait for this member's answer; past the deadline, time the group out and (if this request scored
        the member) write its `group_timeout` answer."""
        poll_s = self.store.poll_s
        give_up = deadline + 2 * spec.lease_s + poll_s
        partial_lease_s = spec.lease_s if spec.fn is not None and spec.fn.score_partial else 0.0
        while True:
            answer = await self.store.read(spec.key, member)
            if answer is not None:
                return answer
            now = self._now()
            if now >= deadline:
                state, received = await self.store.expire(spec.key, partial_lease_s)
                if state == "partial":
                    answers = await self._complete(spec, partial=True)
                    if member in answers:
                        return answers[member]
                    continue  # this member was still being scored: its own request answers it
                if state == "timeout" and own is not None:
                    return await self._timeout_answer(spec, member, received, own)
                if state == "done" and own is not None:
                    # finish writes every answer with the state: none now means judged without this member
                    answer = await self.store.read(spec.key, member)
                    if answer is not None:
                        return answer
                    return await self._late_answer(spec, member, received, own)
                if not state:
                    raise StateStoreUnavailable(
                        f"group {spec.group_id!r}: its state was lost (the store restarted?)"
                    )
                if own is None and now >= give_up:
                    raise GroupAnswerLost(f"group {spec.group_id!r}: no answer for this member; retry it")
            await waiter.wait(max(poll_s if now >= deadline else min(poll_s, deadline - now), 0.001))

    async def _timeout_answer(
        self, spec: GroupSpec, member: str, received: int, own: ScoreResult
    ) -> ScoreResult:
        message = (
            f"group {spec.group_id!r}: {received} of {spec.size} members within {self.config.timeout_s}s"
        )
        error = ErrorInfo(type="GroupTimeout", message=message)
        answer = self._final(own, spec, received, None, "group_timeout", error)
        await self.store.answer(spec.key, member, answer)
        return answer

    def _late(self, request: ScoreRequest, fn: RewardFunction, spec: GroupSpec, answered: int) -> ScoreResult:
        """A member arriving after its group timed out or was judged without it: not scored, a typed
        `GroupTimeout` (the same answer for every retry of it)."""
        message = (
            f"group {spec.group_id!r} was answered at its {self.config.timeout_s}s deadline with "
            f"{answered} of {spec.size} members; this member arrived late and is not scored"
        )
        late = ScoreResult(
            uid=request.uid,
            score=None,
            extra={"group_late": True, "members_present": answered, "members_expected": spec.size},
            reward_fn=fn.name,
            data_source=request.data_source,
            status="group_timeout",
            error=ErrorInfo(type="GroupTimeout", message=message),
            timings=Timings(compute_s=0.0, total_s=0.0),
        )
        return self._final(late, spec, answered, None, "group_timeout", late.error)

    async def _late_answer(
        self, spec: GroupSpec, member: str, answered: int, own: ScoreResult
    ) -> ScoreResult:
        """This member was still being scored when its group was judged partial, without it."""
        message = (
            f"group {spec.group_id!r} was judged at its {self.config.timeout_s}s deadline with {answered} of "
            f"{spec.size} members; this member was still being scored"
        )
        error = ErrorInfo(type="GroupTimeout", message=message)
        answer = self._final(own, spec, answered, None, "group_timeout", error)
        answer.extra.update(group_late=True, members_present=answered, members_expected=spec.size)
        await self.store.answer(spec.key, member, answer)
        return answer

    async def _complete(self, spec: GroupSpec, partial: bool = False) -> dict[str, ScoreResult]:
        """Run the group function once over every member reported (in member order) and write every answer:
        all `size` members, or (`partial`, past the deadline) the members present."""
        gfn = spec.fn
        members = sorted(await self.store.collect(spec.key), key=lambda r: _member_order(r[0]))
        presence = _presence(spec, [name for name, _, _ in members], partial)
        per_sample = [result for _, _, result in members]
        scores = [r.score if r.status == "ok" else None for r in per_sample]
        finals: list[MemberAnswer] = [MemberAnswer(s) for s in scores]
        error: ErrorInfo | None = None
        if gfn is not None:
            try:
                finals = await self._run_group_fn(gfn, [request for _, request, _ in members], scores)
            except Exception as exc:
                finals = [MemberAnswer(None)] * len(members)
                error = group_fn_error(gfn.name, exc)
        if gfn is not None and finals and finals[0].extra and "group_judge" in finals[0].extra:
            self.scorer.metrics.group_judge_swaps(gfn.name, finals[0].extra)
        answers: dict[str, ScoreResult] = {}
        for (name, _, result), final in zip(members, finals, strict=True):
            own_error = error or final.error
            status = "error" if own_error is not None else result.status
            answer = self._final(result, spec, len(members), final.score, status, own_error or result.error)
            if final.extra:
                answer.extra.update(final.extra)
            answer.extra.update(presence)
            answers[name] = answer
        await self.store.finish(spec.key, answers)
        return answers

    async def _run_group_fn(
        self, gfn: GroupFunction, requests: list[ScoreRequest], scores: list[float | None]
    ) -> list[MemberAnswer]:
        samples = [
            {
                "uid": r.uid,
                "group_index": r.group_index,
                "data_source": r.data_source,
                "solution_str": r.solution_str,
                "ground_truth": r.ground_truth,
                "extra_info": r.extra_info,
                "prompt": r.prompt,
                "images": r.images,
            }
            for r in requests
        ]
        injected = {p: getattr(self.scorer.injectables, p) for p in gfn.injected}
        kwargs = {**gfn.kwargs, **injected}
        async with asyncio.timeout(gfn.timeout_s):
            if gfn.is_async:
                value = await awaited(gfn.fn(samples=samples, scores=list(scores), **kwargs))
            else:
                value = await in_thread(gfn.fn, samples=samples, scores=list(scores), **kwargs)
        if not isinstance(value, (list, tuple)) or len(value) != len(scores):
            raise InvalidReturn(f"expected a list of {len(scores)} scores, got {type(value).__name__}")
        return [member_answer(v, i) for i, v in enumerate(value)]

    @staticmethod
    def _final(
        result: ScoreResult,
        spec: GroupSpec,
        received: int,
        score: float | None,
        status: str,
        error: ErrorInfo | None,
    ) -> ScoreResult:
        extra = {
            **result.extra,
            "sample_score": result.score,
            "sample_status": result.status,
            "group": {
                "id": spec.group_id,
                "size": spec.size,
                "received": received,
                "fn": spec.fn.name if spec.fn else None,
                "fn_version": spec.fn.version if spec.fn else None,
            },
        }
        return result.model_copy(update={"score": score, "status": status, "error": error, "extra": extra})
