"""Fleet-wide group scoring: the members of one `group_id` may arrive at any replica (the semantics of
features/groups.py).

A member's arrival runs `GROUP_JOIN`, which opens the group (bounded fleet-wide by `max_open_groups`, its
deadline `timeout_s` from the first member on Redis' clock) or adds the member; a repeated member is told so
and only waits. The replica that received a new member scores it, in a background task (a client that goes
away does not take the group's answer with it), and reports request + per-sample result with `GROUP_REPORT`.
The report that completes the group makes its replica the completer: it reads every member, runs the group
function once, and `GROUP_FINISH` writes every member's answer and publishes. Every waiting request, on
whatever replica, wakes and reads its own answer.

Past the deadline, any member's replica times the group out (`GROUP_EXPIRE`, once), and each member's own
replica writes that member's `group_timeout` answer from its per-sample result, as in-process. A completer
that dies is covered by its lease: after it, the group times out. Answered groups stay readable for the
finished-group window (`finished_groups_kept` most recent, at most `keep_s`), so a late retry gets the same
answer. The order of samples given to the group function, and so every score, equals the in-process one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from rewardfleet.services.gateway.errors import (
    GroupAnswerLost,
    GroupRequestError,
    StateStoreUnavailable,
    TooManyOpenGroups,
)
from rewardfleet.services.gateway.features.groups import (
    GroupFunction,
    GroupScorer,
    MemberKey,
    group_digest,
    group_fn_error,
)
from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult
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

COMPLETER_GRACE_S = 10.0  # a completer's lease: the group function's timeout plus this


@dataclass(frozen=True)
class _Keys:
    group_id: str | int
    gid: str  # group_digest(group_id), hex: what the keys and the open/done sets hold
    meta: str
    members: str
    final: str
    channel: str


@dataclass
class _View:
    """What `GroupScorer._final` reads of a group."""

    group_id: str | int
    size: int
    fn: GroupFunction | None
    members: dict[str, None]


def _member_order(key: MemberKey) -> tuple[str, Any]:
    return (str(type(key[1])), key[1])  # the in-process order (features/groups.py `_complete`)


class RedisGroupScorer(GroupScorer):
    def __init__(self, store: RedisStore, config: Any, scorer: Any, keep_s: float) -> None:
        super().__init__(config, scorer)
        self.store = store
        self.keep_ms = max(1000, int(keep_s * 1000))
        self.prefix = store.key("g", "")
        self.open_key, self.done_key = store.key("groups", "open"), store.key("groups", "done")
        self._join = store.script(GROUP_JOIN)
        self._report = store.script(GROUP_REPORT)
        self._finish = store.script(GROUP_FINISH)
        self._expire_script = store.script(GROUP_EXPIRE)
        self._answer = store.script(GROUP_ANSWER)
        self._read = store.script(GROUP_READ)
        self._collect = store.script(GROUP_COLLECT)

    def _keys(self, group_id: str | int) -> _Keys:
        gid = group_digest(group_id).hex()
        base = self.prefix + "{" + gid + "}"
        return _Keys(group_id, gid, base + ":meta", base + ":m", base + ":f", base)

    async def submit(
        self, request: ScoreRequest, fn: Any, label: str, functions: Mapping[str, GroupFunction]
    ) -> ScoreResult:
        """As `GroupScorer.submit`, fleet-wide; `functions` are the group functions served now."""
        key = self._member_key(request)
        gid = request.group_id
        if gid is None:
            raise GroupRequestError("not a group member: group_id is null")
        gfn = self._group_fn(request, functions)
        size = request.group_size or 1
        keys = self._keys(gid)
        member = json.dumps(list(key))
        args: list[str | int] = [
            keys.gid,
            member,
            size,
            gfn.name if gfn else "",
            int(self.config.timeout_s * 1000),
            self.config.max_open_groups,
            self.keep_ms,
        ]
        reply = await self.store.call(
            "group_join", self.store.eval(self._join, [keys.meta, keys.members, self.open_key], args)
        )
        status = reply[0].decode()
        if status == "open_full":
            raise TooManyOpenGroups(f"{reply[1]} groups are open (max_open_groups); retry later")
        if status == "size":
            raise GroupRequestError(
                f"group {gid!r} has group_size {reply[1].decode()}, this sample says {size}"
            )
        if status == "fn":
            raise GroupRequestError(f"group {gid!r} members name different group functions")
        if status == "full":
            raise GroupRequestError(f"group {gid!r} already has {size} members")
        if status == "answered" and not reply[1]:
            raise GroupRequestError(
                f"group {gid!r} is already answered; {key[0]} {key[1]!r} is not one of it"
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (int(reply[1]) / 1000 if status != "answered" else 0.0)
        if status == "new":
            task = loop.create_task(self._own(request, fn, label, keys, member, size, gfn, deadline))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved if nobody waits
            return await asyncio.shield(task)  # a client that goes away must not cancel the group's answer
        async with self.store.notifier.listen(keys.channel) as inbox:
            return await self._wait(keys, member, size, gfn, deadline, inbox, None)

    async def _own(
        self,
        request: ScoreRequest,
        fn: Any,
        label: str,
        keys: _Keys,
        member: str,
        size: int,
        gfn: GroupFunction | None,
        deadline: float,
    ) -> ScoreResult:
        result = await self.scorer.score(request, fn, label)
        payload = json.dumps(
            {"request": request.model_dump(mode="json"), "result": result.model_dump(mode="json")}
        )
        lease_ms = int(((gfn.timeout_s if gfn else 0.0) + COMPLETER_GRACE_S) * 1000)
        async with self.store.notifier.listen(keys.channel) as inbox:
            reply = await self.store.call(
                "group_report",
                self.store.eval(self._report, [keys.meta, keys.members], [member, payload, lease_ms]),
            )
            state = reply[0].decode()
            if state == "complete":
                return (await self._finish_group(keys, size, gfn))[member]
            if not state:
                raise StateStoreUnavailable(
                    f"group {keys.group_id!r}: its state was lost (the store restarted?)"
                )
            return await self._wait(keys, member, size, gfn, deadline, inbox, result)

    async def _wait(
        self,
        keys: _Keys,
        member: str,
        size: int,
        gfn: GroupFunction | None,
        deadline: float,
        inbox: Inbox,
        own: ScoreResult | None,
    ) -> ScoreResult:
        """Wait for this member's answer; past the deadline, time the group out and (if this replica holds
        the member) write its `group_timeout` answer."""
        loop = asyncio.get_running_loop()
        give_up = deadline + (gfn.timeout_s if gfn else 0.0) + COMPLETER_GRACE_S + self.store.settings.poll_s
        while True:
            raw = await self.store.call("group_read", self.store.eval(self._read, [keys.final], [member]))
            if raw is not None:
                return ScoreResult.model_validate_json(raw)
            now = loop.time()
            if now >= deadline:
                state, received = await self._time_out(keys)
                if state == "timeout" and own is not None:
                    return await self._timeout_answer(keys, member, size, gfn, received, own)
                if not state:
                    raise StateStoreUnavailable(
                        f"group {keys.group_id!r}: its state was lost (the store restarted?)"
                    )
                if own is None and now >= give_up:
                    raise GroupAnswerLost(f"group {keys.group_id!r}: no answer for this member; retry it")
            wait_s = (
                self.store.settings.poll_s
                if now >= deadline
                else min(self.store.settings.poll_s, deadline - now)
            )
            await inbox.wait(max(wait_s, 0.001))

    async def _time_out(self, keys: _Keys) -> tuple[str, int]:
        reply = await self.store.call(
            "group_expire",
            self.store.eval(
                self._expire_script,
                [keys.meta, keys.members, self.open_key, self.done_key],
                [keys.gid, self.config.finished_groups_kept, self.prefix, keys.channel],
            ),
        )
        return reply[0].decode(), int(reply[1])

    def _answer_of(
        self,
        keys: _Keys,
        size: int,
        gfn: GroupFunction | None,
        received: int,
        result: ScoreResult,
        **final: Any,
    ) -> ScoreResult:
        view = _View(keys.group_id, size, gfn, dict.fromkeys(str(i) for i in range(received)))
        return self._final(result, cast(Any, view), final["score"], final["status"], final["error"])

    async def _timeout_answer(
        self, keys: _Keys, member: str, size: int, gfn: GroupFunction | None, received: int, own: ScoreResult
    ) -> ScoreResult:
        message = f"group {keys.group_id!r}: {received} of {size} members within {self.config.timeout_s}s"
        answer = self._answer_of(
            keys,
            size,
            gfn,
            received,
            own,
            score=None,
            status="group_timeout",
            error=ErrorInfo(type="GroupTimeout", message=message),
        )
        await self.store.call(
            "group_answer",
            self.store.eval(
                self._answer, [keys.final, keys.meta], [member, answer.model_dump_json(), keys.channel]
            ),
        )
        return answer

    async def _finish_group(
        self, keys: _Keys, size: int, gfn: GroupFunction | None
    ) -> dict[str, ScoreResult]:
        flat = await self.store.call("group_collect", self.store.eval(self._collect, [keys.members], []))
        stored = dict(zip(flat[::2], flat[1::2], strict=True))
        members = sorted(
            ((tuple(json.loads(m)), json.loads(p)) for m, p in stored.items()),
            key=lambda item: _member_order(cast(MemberKey, item[0])),
        )
        requests = [ScoreRequest.model_validate(p["request"]) for _, p in members]
        per_sample = [ScoreResult.model_validate(p["result"]) for _, p in members]
        scores = [r.score if r.status == "ok" else None for r in per_sample]
        finals: list[float | None] = scores
        error: ErrorInfo | None = None
        if gfn is not None:
            try:
                finals = await self._run_group_fn(gfn, requests, scores)
            except Exception as exc:
                finals = [None] * len(members)
                error = group_fn_error(gfn.name, exc)
        answers: dict[str, ScoreResult] = {}
        for (mkey, _), result, final in zip(members, per_sample, finals, strict=True):
            status = "error" if error is not None else result.status
            answers[json.dumps(list(mkey))] = self._answer_of(
                keys, size, gfn, len(members), result, score=final, status=status, error=error or result.error
            )
        pairs = [part for m, a in answers.items() for part in (m, a.model_dump_json())]
        await self.store.call(
            "group_finish",
            self.store.eval(
                self._finish,
                [keys.meta, keys.final, self.open_key, self.done_key],
                [keys.gid, self.config.finished_groups_kept, self.prefix, keys.channel, *pairs],
            ),
        )
        return answers
