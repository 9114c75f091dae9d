"""`RedisGroupStore`: the fleet-wide `GroupStore` (groups/store_protocol.py) under the one `GroupScorer`
(groups/scorer.py), so the members of one `group_id` may arrive at any replica.

A member's arrival runs `GROUP_JOIN`, which opens the group (bounded fleet-wide by `max_open_groups`, its
deadline `timeout_s` from the first member on Redis' clock) or adds the member; a repeated member is told so
and only waits. The replica that received a new member scores it, in a background task (a client that goes
away does not take the group's answer with it), and reports request + per-sample result with `GROUP_REPORT`.
The report that completes the group makes its replica the completer: it reads every member, runs the group
function once, and `GROUP_FINISH` writes every member's answer and publishes. Every waiting request, on
whatever replica, wakes and reads its own answer.

Past the deadline, the first replica to call `GROUP_EXPIRE` on a group whose function judges partial groups
(and with a member scored) becomes its completer over the members present; otherwise `GROUP_EXPIRE` times
the group out (once), and each member's own replica writes that member's `group_timeout` answer from its
per-sample result, as in-process. A member that joins after that is told `late`. A completer
that dies is covered by its lease: after it, the group times out. Answered groups stay readable for the
finished-group window (`finished_groups_kept` most recent, at most `keep_s`), so a late retry gets the same
answer. The order of samples given to the group function, and so every score, equals the in-process one.
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from rewardfleet.services.gateway.state_store.redis_client import Inbox, RedisStore
from rewardfleet.services.gateway.state_store.redis_scripts import (
    GROUP_ANSWER,
    GROUP_COLLECT,
    GROUP_EXPIRE,
    GROUP_FINISH,
    GROUP_JOIN,
    GROUP_READ,
    GROUP_REPORT,
)

GroupId = str  # group_key(group_id) of groups/store_protocol.py: a digest, never the client's text


@dataclass(frozen=True)
class _Keys:
    gid: str
    meta: str
    members: str
    final: str
    channel: str


class RedisGroupStore:
    """Implements `GroupStore` (groups/store_protocol.py) with the GROUP_* scripts and the store's notifier;
    `keep_s` bounds how long an answered group stays readable."""

    def __init__(self, store: RedisStore, config: GroupsConfig, keep_s: float) -> None:
        self.store = store
        self.config = config
        self.poll_s = store.settings.poll_s
        self.keep_ms = max(1000, int(keep_s * 1000))
        self.prefix = store.key("g", "")
        self.open_key, self.done_key = store.key("groups", "open"), store.key("groups", "done")
        self._join = store.script(GROUP_JOIN)
        self._report = store.script(GROUP_REPORT)
        self._finish = store.script(GROUP_FINISH)
        self._expire = store.script(GROUP_EXPIRE)
        self._answer = store.script(GROUP_ANSWER)
        self._read = store.script(GROUP_READ)
        self._collect = store.script(GROUP_COLLECT)

    def _keys(self, gid: GroupId) -> _Keys:
        base = self.prefix + "{" + gid + "}"
        return _Keys(gid, base + ":meta", base + ":m", base + ":f", base)

    async def _run(self, op: str, script: Any, keys: list[str], args: list[Any]) -> Any:
        return await self.store.call(op, self.store.eval(script, keys, args))

    async def join(self, group_id: GroupId, member: str, size: int, fn_name: str | None) -> tuple[str, float]:
        k = self._keys(group_id)
        args: list[str | int] = [
            k.gid,
            member,
            size,
            fn_name or "",
            int(self.config.timeout_s * 1000),
            self.config.max_open_groups,
            self.keep_ms,
        ]
        reply = await self._run("group_join", self._join, [k.meta, k.members, self.open_key], args)
        status = reply[0].decode()
        if status in ("new", "dup"):
            return status, int(reply[1]) / 1000
        if status in ("answered", "open_full", "size", "late"):
            return status, float(reply[1])
        return status, 0.0

    def listen(self, group_id: GroupId) -> AbstractAsyncContextManager[Inbox]:
        return self.store.notifier.listen(self._keys(group_id).channel)

    async def report(
        self, group_id: GroupId, member: str, request: ScoreRequest, result: ScoreResult, lease_s: float
    ) -> str:
        k = self._keys(group_id)
        payload = json.dumps(
            {"request": request.model_dump(mode="json"), "result": result.model_dump(mode="json")}
        )
        args = [member, payload, int(lease_s * 1000)]
        reply = await self._run("group_report", self._report, [k.meta, k.members], args)
        return str(reply[0].decode())

    async def collect(self, group_id: GroupId) -> list[tuple[str, ScoreRequest, ScoreResult]]:
        flat = await self._run("group_collect", self._collect, [self._keys(group_id).members], [])
        members = []
        for name, raw in zip(flat[::2], flat[1::2], strict=True):
            if raw:  # joined, not reported yet
                payload = json.loads(raw)
                request = ScoreRequest.model_validate(payload["request"])
                members.append((name.decode(), request, ScoreResult.model_validate(payload["result"])))
        return members

    async def finish(self, group_id: GroupId, answers: dict[str, ScoreResult]) -> None:
        k = self._keys(group_id)
        pairs = [part for m, a in answers.items() for part in (m, a.model_dump_json())]
        args = [k.gid, self.config.finished_groups_kept, self.prefix, k.channel, *pairs]
        await self._run("group_finish", self._finish, [k.meta, k.final, self.open_key, self.done_key], args)

    async def expire(self, group_id: GroupId, partial_lease_s: float = 0.0) -> tuple[str, int]:
        k = self._keys(group_id)
        args = [k.gid, self.config.finished_groups_kept, self.prefix, k.channel, int(partial_lease_s * 1000)]
        keys = [k.meta, k.members, self.open_key, self.done_key]
        reply = await self._run("group_expire", self._expire, keys, args)
        return reply[0].decode(), int(reply[1])

    async def answer(self, group_id: GroupId, member: str, answer: ScoreResult) -> None:
        k = self._keys(group_id)
        args = [member, answer.model_dump_json(), k.channel]
        await self._run("group_answer", self._answer, [k.final, k.meta], args)

    async def read(self, group_id: GroupId, member: str) -> ScoreResult | None:
        raw = await self._run("group_read", self._read, [self._keys(group_id).final], [member])
        return None if raw is None else ScoreResult.model_validate_json(raw)
