"""`MemoryGroupStore`: the `GroupStore` (groups/store_protocol.py) of one process, the default.

The same state machine as the Redis scripts (state_store/redis_scripts.py GROUP_*), on the event loop's clock:
a group is open until `size` members reported (then completing, for its completer's lease) or its deadline;
done or timed out, it is retired: the `finished_groups_kept` most recent stay answerable for late retries,
a retired group stays readable while one of its waiters still listens, and one with members still being
scored stays until they report (as Redis keeps a group's keys for the finished-group window).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.store_protocol import GroupId, Reported
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult

OPEN_SLACK_S = 10.0  # an open group counts against max_open_groups until this long past its deadline


class Timer(Protocol):
    """What deadlines are read from and waits are timed on: the event loop, or a test's clock."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> Any: ...


@dataclass(eq=False)
class _Group:
    size: int
    fn: str
    deadline: float
    state: str = "open"
    until: float = 0.0
    received: int = 0
    partial: bool = False
    members: dict[str, tuple[ScoreRequest, ScoreResult] | None] = field(default_factory=dict)
    final: dict[str, ScoreResult] = field(default_factory=dict)
    waiters: set[_Wake] = field(default_factory=set)


@dataclass(eq=False)
class _Wake:
    """A waiter's wake-up; it holds its group, so a retired group stays readable while someone listens."""

    group: _Group | None
    timer: Timer | None = None  # None: the running event loop
    event: asyncio.Event = field(default_factory=asyncio.Event)

    async def wait(self, timeout_s: float) -> None:
        if not self.event.is_set():
            timer = (self.timer or asyncio.get_running_loop()).call_later(timeout_s, self.event.set)
            try:
                await self.event.wait()
            finally:
                timer.cancel()
        self.event.clear()


class MemoryGroupStore:
    poll_s = 0.5

    def __init__(self, config: GroupsConfig, timer: Timer | None = None) -> None:
        self.config = config
        self.timer = timer  # None: the running event loop
        self._groups: dict[GroupId, _Group] = {}  # open or completing
        self._open: dict[GroupId, float] = {}  # group -> when it stops counting as open
        self._done: OrderedDict[GroupId, _Group] = OrderedDict()
        self._unreported: dict[GroupId, _Group] = {}  # retired, some members still being scored
        self._listened: weakref.WeakValueDictionary[GroupId, _Group] = weakref.WeakValueDictionary()

    def _find(self, gid: GroupId) -> _Group | None:
        for found in (self._groups, self._done, self._unreported, self._listened):
            group = found.get(gid)
            if group is not None:
                return group
        return None

    def _now(self) -> float:
        return (self.timer or asyncio.get_running_loop()).time()

    async def join(self, group_id: GroupId, member: str, size: int, fn_name: str | None) -> tuple[str, float]:
        now, group = self._now(), self._find(group_id)
        fn = fn_name or ""
        if group is not None and group.state in ("done", "timeout"):
            if member not in group.members and (group.state == "timeout" or group.partial):
                return "late", group.received
            return "answered", float(member in group.members)
        if group is None:
            for gid in [g for g, until in self._open.items() if until < now]:
                del self._open[
                    gid
                ]  # never retired (its completer was cancelled): forget it, as Redis' TTL does
                self._groups.pop(gid, None)
            if len(self._open) >= self.config.max_open_groups:
                return "open_full", len(self._open)
            group = _Group(size=size, fn=fn, deadline=now + self.config.timeout_s)
            group.members[member] = None
            self._groups[group_id] = group
            self._open[group_id] = group.deadline + OPEN_SLACK_S
            return "new", group.deadline - now
        if group.size != size:
            return "size", group.size
        if group.fn != fn:
            return "fn", 0
        if member in group.members:
            return "dup", group.deadline - now
        if len(group.members) >= group.size:
            return "full", 0
        group.members[member] = None
        return "new", group.deadline - now

    @contextlib.asynccontextmanager
    async def listen(self, group_id: GroupId) -> AsyncIterator[_Wake]:
        group = self._find(group_id)
        wake = _Wake(group, self.timer)
        if group is not None:
            group.waiters.add(wake)
            self._listened[group_id] = group
        try:
            yield wake
        finally:
            if group is not None:
                group.waiters.discard(wake)

    @staticmethod
    def _publish(group: _Group) -> None:
        for wake in group.waiters:
            wake.event.set()

    async def report(
        self, group_id: GroupId, member: str, request: ScoreRequest, result: ScoreResult, lease_s: float
    ) -> str:
        group = self._find(group_id)
        if group is None:
            return ""
        group.members[member] = (request, result)
        if group.state != "open":
            if None not in group.members.values():
                self._unreported.pop(group_id, None)
            return group.state
        if sum(payload is not None for payload in group.members.values()) >= group.size:
            group.state, group.until = "completing", self._now() + lease_s
            return "complete"
        return "open"

    async def collect(self, group_id: GroupId) -> list[Reported]:
        group = self._find(group_id)
        members = group.members.items() if group is not None else ()
        return [(m, *payload) for m, payload in members if payload is not None]

    def _retire(self, gid: GroupId, group: _Group) -> None:
        self._groups.pop(gid, None)
        self._open.pop(gid, None)
        if None in group.members.values():
            self._unreported[gid] = group
        kept = self.config.finished_groups_kept
        if kept <= 0:
            return
        self._done[gid] = group
        while len(self._done) > kept:
            self._done.popitem(last=False)

    async def finish(self, group_id: GroupId, answers: dict[str, ScoreResult]) -> None:
        group = self._find(group_id)
        if group is None or group.state != "completing":
            return
        group.final.update(answers)
        group.state, group.received = "done", len(answers)
        self._retire(group_id, group)
        self._publish(group)

    async def expire(self, group_id: GroupId, partial_lease_s: float = 0.0) -> tuple[str, int]:
        group = self._find(group_id)
        if group is None:
            return "", 0
        now = self._now()
        scored = any(payload is not None for payload in group.members.values())
        if group.state == "open" and partial_lease_s > 0 and now >= group.deadline and scored:
            group.state, group.until, group.partial = "completing", now + partial_lease_s, True
            return "partial", len(group.members)
        if (group.state == "open" and now >= group.deadline) or (
            group.state == "completing" and now >= group.until
        ):
            group.state, group.received = "timeout", len(group.members)
            self._retire(group_id, group)
            self._publish(group)
        return group.state, group.received

    async def answer(self, group_id: GroupId, member: str, answer: ScoreResult) -> None:
        group = self._find(group_id)
        if group is not None:
            group.final[member] = answer
            self._publish(group)

    async def read(self, group_id: GroupId, member: str) -> ScoreResult | None:
        group = self._find(group_id)
        return group.final.get(member) if group is not None else None
