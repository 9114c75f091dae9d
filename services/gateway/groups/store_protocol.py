"""What the group scorer (groups/scorer.py) needs from storage: the `GroupStore` protocol.

The scorer holds the logic (member keys, which group function, scoring each member once, running the group
function once, the answers); a store only keeps a group's state and wakes its waiters. Two implement it:
`MemoryGroupStore` (groups/memory_store.py, one process) and `RedisGroupStore` (groups/redis_store.py,
every replica of a fleet, its Lua scripts atomic in Redis). Both follow the same state machine:

    join      opens the group (bounded by `max_open_groups`, its deadline `timeout_s` from the first member)
              or adds the member; says when the member is already in, or the group already answered
    report    stores a member's request and per-sample result; the report that makes `size` members
              scored says "complete": its caller runs the group function, leased for `spec.lease_s`
    collect   every reported member of a group (for the completer)
    finish    writes every member's answer, retires the group (finished ones kept for late retries), wakes
    expire    past the deadline, with a partial lease and a member scored: "partial", its caller judges the
              members present (leased, as a completer); else past the deadline (or a completer's lease)
              times the group out once -> (state, received)
    answer    one member's own answer (its timeout answer), wakes its repeated posts
    read      a member's answer, if written
    listen    a waiter's wake-up for a group (`Waiter.wait(timeout_s)`); waiters re-read at least every
              `poll_s`

A group is named by its key, `group_key(group_id)`: a digest, so a client's group_id is never a key itself
(JSON first, so the string "1" and the integer 1 stay two groups). Members are named by strings (the JSON of
the member key), so the same names are used in every store. The
protocol speaks only in plain values and the request/result schemas: storage sits below the features (the
layers contract in pyproject.toml) and implements it without importing it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult

GroupId = str  # group_key(group_id)
Reported = tuple[str, ScoreRequest, ScoreResult]  # a reported member: its name, request, per-sample result


def group_key(group_id: str | int, namespace: str = "") -> str:
    """What the stores key a group by (see the module docstring); a tenant's `namespace` (tenants/) is
    hashed in too, so two tenants' equal group_ids are two groups."""
    data = json.dumps(group_id) if not namespace else json.dumps([namespace, group_id])
    return hashlib.blake2b(data.encode(), digest_size=16).hexdigest()


class Waiter(Protocol):
    async def wait(self, timeout_s: float) -> None:
        """Return after a wake-up for the group or `timeout_s`, whichever comes first."""
        ...


class GroupStore(Protocol):
    poll_s: float

    async def join(self, group_id: GroupId, member: str, size: int, fn_name: str | None) -> tuple[str, float]:
        """(status, value): ("new" | "dup", seconds to the deadline), ("answered", 1 if a member else 0),
        ("late", members answered: not a member of a group timed out or judged partial), ("open_full", open
        groups), ("size", the group's size), ("fn" | "full", 0)."""
        ...

    def listen(self, group_id: GroupId) -> AbstractAsyncContextManager[Waiter]: ...

    async def report(
        self, group_id: GroupId, member: str, request: ScoreRequest, result: ScoreResult, lease_s: float
    ) -> str:
        """ "complete" (the caller completes the group, leased for `lease_s`), else the group's state
        ("open", "timeout", ...; "" when the group is gone)."""
        ...

    async def collect(self, group_id: GroupId) -> list[Reported]: ...

    async def finish(self, group_id: GroupId, answers: dict[str, ScoreResult]) -> None: ...

    async def expire(self, group_id: GroupId, partial_lease_s: float = 0.0) -> tuple[str, int]: ...

    async def answer(self, group_id: GroupId, member: str, answer: ScoreResult) -> None: ...

    async def read(self, group_id: GroupId, member: str) -> ScoreResult | None: ...


class Groups(Protocol):
    """What the facade submits a group member to (`GroupScorer`)."""

    async def submit(
        self, request: ScoreRequest, fn: Any, label: str, functions: Mapping[str, Any]
    ) -> ScoreResult: ...
