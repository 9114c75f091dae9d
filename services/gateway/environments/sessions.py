"""`Sessions`: the one object every protocol route calls (NeMo Gym, OpenEnv, MCP), so they behave the same.

A call finds its session by the caller's tenant and bearer token (another tenant's token is the same 404 as
an unknown one), validates the tool's arguments before touching the session (bad arguments change nothing),
then holds the session's lock in the store while the tool runs on a copy of the state, and saves the new
state with a version check. So two calls of one session, on any processes or replicas, run one after the
other and never lose an update. `SessionLimits` are checked on every call; expired sessions are freed by
`reap`, which `start` runs every `reap_interval_s` (every process may: the store hands each expired session
to one of them).

The tenant's `sessions_open` quota and the caller's tenant come from `tenants/` (above this package): it
sets `quota`, `on_refused` and `current_tenant`; without tenants every session is tenant "" and unbounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from rewardfleet.services.environments import (
    Environment,
    Session,
    ToolError,
    ToolSpec,
    Verdict,
)
from rewardfleet.services.gateway.environments.config import EnvironmentsConfig
from rewardfleet.services.gateway.environments.errors import (
    EnvironmentFailed,
    EnvironmentTimeout,
    SessionNotFound,
    SessionQuotaExceeded,
    TaskInvalid,
    ToolArgumentsInvalid,
    UnknownEnvironment,
    UnknownTool,
    VerifyBodyInvalid,
)
from rewardfleet.services.gateway.environments.limits import check_call, check_json, check_state, expiry
from rewardfleet.services.gateway.environments.metrics import SessionMetrics, tenant_label
from rewardfleet.services.gateway.environments.records import (
    SessionRecord,
    new_id,
    new_token,
    token_key,
)
from rewardfleet.services.gateway.environments.sandboxes import SessionSandboxes
from rewardfleet.services.gateway.environments.store_protocol import SessionStore
from rewardfleet.services.gateway.errors import GatewayError

logger = logging.getLogger(__name__)
T = TypeVar("T")
REAP_BATCH = 100
LOCK_MARGIN_S = 5.0  # a call's lock outlives its timeout by this much


@dataclass(frozen=True)
class OpenedSession:
    """`token` is the bearer secret (256 random bits); `id` is public."""

    token: str
    id: str
    env: str


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's JSON output; `is_error` when the tool raised `ToolError` (`output` is then its message)."""

    output: Any
    is_error: bool


def _not_a_mapping(name: str) -> list[dict[str, Any]]:
    return [{"loc": (), "msg": f"{name} must be a JSON object"}]


class Sessions:
    def __init__(
        self,
        environments: Mapping[str, Environment],
        store: SessionStore,
        metrics: SessionMetrics,
        config: EnvironmentsConfig,
        clock: Callable[[], float] = time.time,
        sandboxes: SessionSandboxes | None = None,
    ) -> None:
        self._envs = dict(environments)
        self.sandboxes = sandboxes or SessionSandboxes(None)
        self.store = store
        self.metrics = metrics
        self.config = config
        self.clock = clock
        self.quota: Callable[[str], int | None] = lambda tenant: None
        self.on_refused: Callable[[str], None] = lambda tenant: None
        self.current_tenant: Callable[[], str] = lambda: ""
        self._reaper: asyncio.Task[None] | None = None

    # ---- what is served -----------------------------------------------------------------------------------

    def environments(self) -> list[str]:
        return sorted(self._envs)

    def environment(self, env: str) -> Environment:
        found = self._envs.get(env)
        if found is None:
            known = ", ".join(self.environments()) or "none"
            raise UnknownEnvironment(f"no environment {env[:64]!r} is loaded (loaded: {known})")
        return found

    def tools(self, env: str) -> list[ToolSpec]:
        return type(self.environment(env)).tool_specs()

    # ---- the session's life -------------------------------------------------------------------------------

    async def open(self, tenant: str, env: str, task: Mapping[str, Any]) -> OpenedSession:
        environment = self.environment(env)
        if not isinstance(task, Mapping):
            raise TaskInvalid("task", _not_a_mapping("the task"))
        limit = self.quota(tenant)
        now = self.clock()
        if limit is not None and await self.store.count(tenant, now) >= limit:
            raise self._refuse(tenant, limit)
        try:
            parsed = environment.Task.model_validate(task)
        except ValidationError as exc:
            raise TaskInvalid("task", exc.errors(include_url=False)) from None
        record = SessionRecord(
            id=new_id(),
            tenant=tenant,
            env=env,
            task=parsed.model_dump(mode="json"),
            opened_at=now,
            last_active_at=now,
            expires_at=expiry(environment.limits, now, now),
        )
        session = self._session(record, environment)
        stored = False
        try:
            try:
                await self._run(environment.seed(session, parsed), env, "seed", TaskInvalid)
            except ToolError as exc:
                raise TaskInvalid("task", [{"loc": (), "msg": exc.message}]) from None
            record.state = session.state
            check_state(environment.limits, record)
            token = new_token()
            stored = await self.store.create(_key(token), record, limit)
            if not stored:
                raise self._refuse(tenant, limit or 0)
        finally:
            if not stored:  # what seed made outside the state (a sandbox) is freed with the session
                await self._free(record)
        self.metrics.created.labels(env, tenant_label(tenant)).inc()
        if self.store.volatile:  # a Redis store's count is re-read at each sweep, not on every open
            await self._refresh_open()
        return OpenedSession(token, record.id, env)

    async def reset(self, tenant: str, token: str, task: Mapping[str, Any]) -> str:
        """Starts a live session over with `task` under the same token (OpenEnv's reset of a session its
        client holds by id); returns the session's id. The new episode is seeded first: a task refused or a
        seed that fails leaves the old episode as it was; once seeded, what the old one made is freed."""
        if not isinstance(task, Mapping):
            raise TaskInvalid("task", _not_a_mapping("the task"))
        async with self._locked(_key(token), tenant) as (key, record):
            environment = self.environment(record.env)
            try:
                parsed = environment.Task.model_validate(task)
            except ValidationError as exc:
                raise TaskInvalid("task", exc.errors(include_url=False)) from None
            now = self.clock()
            fresh = dataclasses.replace(
                record,
                task=parsed.model_dump(mode="json"),
                state={},
                tool_calls=0,
                opened_at=now,
                last_active_at=now,
                expires_at=expiry(environment.limits, now, now),
                version=record.version + 1,
                sandbox_id=None,
            )
            session = self._session(fresh, environment)
            saved = False
            try:
                try:
                    await self._run(environment.seed(session, parsed), record.env, "seed", TaskInvalid)
                except ToolError as exc:
                    raise TaskInvalid("task", [{"loc": (), "msg": exc.message}]) from None
                fresh.state = session.state
                check_state(environment.limits, fresh)
                saved = await self.store.save(key, fresh, record.version)
                if not saved:
                    raise SessionNotFound()  # expired and freed while it was seeded
            finally:
                if not saved:  # what the failed seed made outside the state (a sandbox) is freed
                    await self.sandboxes.stop(fresh.sandbox_id)
            await self._free(record)
            return record.id

    async def call(self, tenant: str, token: str, tool: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        async with self._locked(_key(token), tenant) as (key, record):
            environment = self.environment(record.env)
            definition = type(environment).tool_definitions.get(tool)
            if definition is None:
                tools = ", ".join(type(environment).tool_definitions) or "none"
                raise UnknownTool(f"environment {record.env!r} has no tool {tool[:64]!r} (tools: {tools})")
            outcome, had_sandbox = "invalid", record.sandbox_id
            try:
                if not isinstance(arguments, Mapping):
                    raise ToolArgumentsInvalid(tool, _not_a_mapping("the arguments"))
                try:
                    parsed = definition.parse(arguments)
                except ValidationError as exc:
                    raise ToolArgumentsInvalid(tool, exc.errors(include_url=False)) from None
                now = self.clock()
                outcome = "limit"
                check_call(environment.limits, record, now)
                outcome = "failed"
                session = self._session(record, environment)
                session.state = copy.deepcopy(record.state)  # a ToolError leaves the saved state as it was
                try:
                    output = await self._run(
                        definition.invoke(environment, session, parsed), record.env, tool
                    )
                    is_error = False
                except ToolError as exc:
                    output, is_error = exc.message, True
                except EnvironmentTimeout:
                    outcome = "timeout"
                    raise
                check_json(output, record.env, tool)
                expected = record.version
                record.tool_calls += 1
                record.version += 1
                record.last_active_at = now
                record.expires_at = expiry(environment.limits, record.opened_at, now)
                if not is_error:
                    record.state = session.state
                    outcome = "limit"
                    check_state(environment.limits, record)
                if not await self.store.save(key, record, expected):
                    outcome = "failed"
                    raise SessionNotFound()  # expired and freed while the tool ran
                outcome = "tool_error" if is_error else "ok"
                return ToolOutcome(output, is_error)
            finally:
                self.metrics.tool_call(record.env, tool, outcome).inc()
                if outcome not in ("ok", "tool_error") and record.sandbox_id != had_sandbox:
                    await self.sandboxes.stop(record.sandbox_id)  # made by this call, and saved nowhere

    async def verify(self, tenant: str, token: str, body: Mapping[str, Any]) -> Verdict:
        if not isinstance(body, Mapping):
            raise VerifyBodyInvalid("verify", _not_a_mapping("the verify body"))
        async with self._locked(_key(token), tenant) as (_, record):
            environment = self.environment(record.env)
            verdict = await self._run(
                environment.verify(self._session(record, environment), dict(body)),
                record.env,
                "verify",
                VerifyBodyInvalid,
            )
        if not isinstance(verdict, Verdict):
            raise EnvironmentFailed(f"{record.env}.verify returned {type(verdict).__name__}, not a Verdict")
        check_json(verdict.extras, record.env, "verify")
        return verdict

    async def state(self, tenant: str, token: str) -> dict[str, Any]:
        """The session as OpenEnv's `/state` shows it: {id, env, tool_calls, state}."""
        record = await self._load(_key(token), tenant)
        return {"id": record.id, "env": record.env, "tool_calls": record.tool_calls, "state": record.state}

    async def close(self, tenant: str, token: str) -> None:
        key = _key(token)
        record = await self.store.delete(key, tenant)
        if record is None:
            raise SessionNotFound()
        expired = record.expires_at <= self.clock()
        await self._free(record)
        counter = self.metrics.expired if expired else self.metrics.closed
        counter.labels(record.env, tenant_label(record.tenant)).inc()
        if self.store.volatile:
            await self._refresh_open()
        if expired:
            raise SessionNotFound()

    # ---- expiry -------------------------------------------------------------------------------------------

    async def reap(self) -> int:
        """Frees every session expired now (the store hands each to one reaper); returns how many."""
        freed = 0
        while True:
            records = await self.store.reap(self.clock(), REAP_BATCH)
            for record in records:
                await self._free(record)
                self.metrics.expired.labels(record.env, tenant_label(record.tenant)).inc()
            freed += len(records)
            if len(records) < REAP_BATCH:
                break
        await self._refresh_open()
        return freed

    def start(self) -> None:
        self._reaper = asyncio.create_task(self._reap_forever(), name="environment-session-reaper")

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        if self.store.volatile:  # nobody else could serve them: closed now, so close() frees what they hold
            for record in await self.store.reap(float("inf"), 1 << 62):
                await self._free(record)
        await self.store.close()

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.reap_interval_s)
            try:
                await self.reap()
            except Exception as exc:  # a lost store: the next sweep tries again
                logger.warning("environment sessions: reaping failed: %s: %s", type(exc).__name__, exc)

    # ---- helpers ------------------------------------------------------------------------------------------

    def _refuse(self, tenant: str, limit: int) -> SessionQuotaExceeded:
        self.on_refused(tenant)
        return SessionQuotaExceeded(tenant, limit, self.config.reap_interval_s)

    async def _load(self, key: str, tenant: str) -> SessionRecord:
        record = await self.store.load(key, self.clock())
        if record is None or record.tenant != tenant:
            raise SessionNotFound()
        return record

    @contextlib.asynccontextmanager
    async def _locked(self, key: str, tenant: str) -> AsyncIterator[tuple[str, SessionRecord]]:
        """Holds the session's lock and yields (key, its record as of now); SessionNotFound when it is not
        the tenant's live session."""
        lease_s = self.config.tool_timeout_s + LOCK_MARGIN_S
        async with self.store.locked(key, self.clock(), lease_s, self.config.lock_wait_s) as record:
            if record is None or record.tenant != tenant:
                raise SessionNotFound()
            yield key, record

    def _session(self, record: SessionRecord, environment: Environment) -> Session:
        return Session(
            id=record.id,
            tenant=record.tenant,
            env=record.env,
            state=record.state,
            tool_calls=record.tool_calls,
            sandbox_opener=self.sandboxes.opener(environment, record),
        )

    async def _run(
        self,
        pending: Awaitable[T],
        env: str,
        what: str,
        invalid: type[TaskInvalid | VerifyBodyInvalid] | None = None,
    ) -> T:
        """The environment's coroutine, timed out; its own failures typed (a ToolError passes through)."""
        try:
            async with asyncio.timeout(self.config.tool_timeout_s):  # in this task: no task a call
                return await pending
        except (ToolError, GatewayError):
            raise
        except ValidationError as exc:
            if invalid is None:
                raise EnvironmentFailed(f"{env}.{what} failed: {exc}") from None
            raise invalid(what, exc.errors(include_url=False)) from None
        except TimeoutError:
            raise EnvironmentTimeout(
                f"{env}.{what} ran past {self.config.tool_timeout_s:g}s (environments.tool_timeout_s)"
            ) from None
        except Exception as exc:
            logger.exception("environment %s: %s failed", env, what)
            raise EnvironmentFailed(f"{env}.{what} failed: {type(exc).__name__}: {exc}") from None

    async def _free(self, record: SessionRecord) -> None:
        """Runs the environment's close, then stops the session's sandbox; failures are logged (the session
        is gone either way)."""
        environment = self._envs.get(record.env)
        if environment is not None:
            session = self._session(record, environment)
            try:
                await self._run(environment.close(session), record.env, "close")
            except Exception as exc:
                logger.warning("environment %s: close of session %s failed: %s", record.env, record.id, exc)
        await self.sandboxes.stop(record.sandbox_id)

    async def _refresh_open(self) -> None:
        try:
            self.metrics.set_open(await self.store.open(), set(self._envs))
        except Exception as exc:  # a gauge is not worth failing a request for
            logger.warning("environment sessions: open count not read: %s", exc)


def _key(token: str) -> str:
    """The store key of a token; anything that cannot be a token is an unknown session."""
    key = token_key(token)
    if key is None:
        raise SessionNotFound()
    return key
