"""`RedisSessionStore`: sessions in Redis (the `--processes` state server, or one every replica shares), so
any process or replica serves any call of a session.

Keys (under the state key prefix): `env:s:<key>` a hash {d: record JSON, v: version, t: tenant, e: env},
`env:t:<tenant>` and `env:exp` sorted sets of keys by expiry (ms), `env:open` live counts by "env\\ntenant",
`env:l:<key>` a call's lock. Every check-then-write is one Lua script, so the `sessions_open` quota and the
version check hold under concurrent replicas. A record's hash also carries a Redis TTL an hour past its
expiry: should every gateway stop, Redis still frees it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from rewardfleet.services.gateway.environments.errors import SessionBusy
from rewardfleet.services.gateway.environments.records import SessionRecord
from rewardfleet.services.gateway.errors import StateStoreUnavailable
from rewardfleet.services.gateway.state_store.redis_client import RedisStore

logger = logging.getLogger(__name__)

SAFETY_TTL_S = 3600.0

# KEYS: session, tenant index, expiry index, open counts. ARGV: record json, version, tenant, env,
# expires_ms, now_ms, limit (-1: none), key, px, open field. -> 1 created | 0 the tenant is at its limit
_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[6])
local limit = tonumber(ARGV[7])
if limit >= 0 and redis.call('ZCARD', KEYS[2]) >= limit then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'v', ARGV[2], 't', ARGV[3], 'e', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[9])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[8])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[8])
redis.call('HINCRBY', KEYS[4], ARGV[10], 1)
return 1
"""

# KEYS: session, tenant index, expiry index. ARGV: record json, expected version, new version, expires_ms,
# key, px. -> 1 saved | 0 the version moved on or the session is gone
_SAVE = """
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'v', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
return 1
"""

_FORGET = """
local function forget(k, m, t, e)
  redis.call('DEL', k)
  redis.call('ZREM', KEYS[1], m)
  if t then
    redis.call('ZREM', ARGV[4] .. t, m)
    local f = e .. '\\n' .. t
    if redis.call('HINCRBY', KEYS[2], f, -1) <= 0 then redis.call('HDEL', KEYS[2], f) end
  end
end
"""

# KEYS: expiry index, open counts, session. ARGV: tenant, key, session prefix, tenant prefix.
# -> the record json if the session was the tenant's (and is now gone), else false
_DELETE = (
    _FORGET
    + """
local t = redis.call('HGET', KEYS[3], 't')
if t ~= ARGV[1] then return false end
local d = redis.call('HGET', KEYS[3], 'd')
forget(KEYS[3], ARGV[2], t, redis.call('HGET', KEYS[3], 'e'))
return d
"""
)

# KEYS: expiry index, open counts. ARGV: now_ms, batch, session prefix, tenant prefix.
# -> the records (json) of up to `batch` expired sessions, removed
_REAP = (
    _FORGET
    + """
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, m in ipairs(members) do
  local k = ARGV[3] .. m
  local d = redis.call('HGET', k, 'd')
  forget(k, m, redis.call('HGET', k, 't'), redis.call('HGET', k, 'e'))
  if d then out[#out + 1] = d end
end
return out
"""
)

# KEYS: lock, session. ARGV: owner, lease_ms. -> {1, record json or false} locked | {0} held by another call
_LOCK = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {0} end
return {1, redis.call('HGET', KEYS[2], 'd')}
"""

# KEYS: lock. ARGV: owner. Frees the lock only if this call still holds it.
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class RedisSessionStore:
    """Implements `SessionStore` (store_protocol.py) over the gateway's shared `RedisStore`."""

    volatile = False  # its sessions outlive this process: any other process or replica serves them

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.session_prefix = store.key("env", "s", "")
        self.tenant_prefix = store.key("env", "t", "")
        self.expiry_key = store.key("env", "exp")
        self.open_key = store.key("env", "open")
        self.lock_prefix = store.key("env", "l", "")
        self._create = store.script(_CREATE)
        self._save = store.script(_SAVE)
        self._delete = store.script(_DELETE)
        self._reap = store.script(_REAP)
        self._lock_script = store.script(_LOCK)
        self._unlock = store.script(_UNLOCK)

    async def _run(self, op: str, script: Any, keys: list[str], args: list[Any]) -> Any:
        return await self.store.call(op, self.store.eval(script, keys, args))

    def _px(self, record: SessionRecord) -> int:
        return max(1000, _ms(record.expires_at - time.time() + SAFETY_TTL_S))

    async def create(self, key: str, record: SessionRecord, limit: int | None) -> bool:
        keys = [self.session_prefix + key, self.tenant_prefix + record.tenant, self.expiry_key, self.open_key]
        args = [
            record.to_json(),
            record.version,
            record.tenant,
            record.env,
            _ms(record.expires_at),
            _ms(record.opened_at),
            -1 if limit is None else limit,
            key,
            self._px(record),
            f"{record.env}\n{record.tenant}",
        ]
        return int(await self._run("env_session_create", self._create, keys, args)) == 1

    async def count(self, tenant: str, now: float) -> int:
        pending = self.store.client.zcount(self.tenant_prefix + tenant, f"({_ms(now)}", "+inf")
        return int(await self.store.call("env_session_count", pending))

    async def load(self, key: str, now: float) -> SessionRecord | None:
        pending = self.store.client.hget(self.session_prefix + key, "d")
        text = await self.store.call("env_session_load", pending)
        if text is None:
            return None
        record = SessionRecord.from_json(text)
        return record if record.expires_at > now else None

    @asynccontextmanager
    async def locked(
        self, key: str, now: float, lease_s: float, wait_s: float
    ) -> AsyncIterator[SessionRecord | None]:
        lock, owner = self.lock_prefix + key, secrets.token_hex(8)
        deadline, pause = time.monotonic() + wait_s, 0.002
        keys, args = [lock, self.session_prefix + key], [owner, max(1, _ms(lease_s))]
        while True:
            reply = await self._run("env_session_lock", self._lock_script, keys, args)
            if int(reply[0]) == 1:
                break
            if time.monotonic() >= deadline:
                raise SessionBusy(f"another call of this session ran past {wait_s:g}s (lock_wait_s)")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)
        try:
            text = reply[1] if len(reply) > 1 else None
            record = SessionRecord.from_json(text) if text else None
            yield record if record is not None and record.expires_at > now else None
        finally:
            try:
                await asyncio.shield(self._run("env_session_unlock", self._unlock, [lock], [owner]))
            except StateStoreUnavailable as exc:  # the call's answer stands; the lease frees the lock
                logger.warning("session lock not released (its lease will free it): %s", exc.message)

    async def save(self, key: str, record: SessionRecord, expected: int) -> bool:
        keys = [self.session_prefix + key, self.tenant_prefix + record.tenant, self.expiry_key]
        args = [record.to_json(), expected, record.version, _ms(record.expires_at), key, self._px(record)]
        return int(await self._run("env_session_save", self._save, keys, args)) == 1

    async def delete(self, key: str, tenant: str) -> SessionRecord | None:
        keys = [self.expiry_key, self.open_key, self.session_prefix + key]
        args = [tenant, key, self.session_prefix, self.tenant_prefix]
        text = await self._run("env_session_delete", self._delete, keys, args)
        return None if not text else SessionRecord.from_json(text)

    async def reap(self, now: float, batch: int) -> list[SessionRecord]:
        keys = [self.expiry_key, self.open_key]
        args = [_ms(now), batch, self.session_prefix, self.tenant_prefix]
        texts = await self._run("env_session_reap", self._reap, keys, args)
        return [SessionRecord.from_json(text) for text in texts]

    async def open(self) -> dict[tuple[str, str], int]:
        raw = await self.store.call("env_session_open", self.store.client.hgetall(self.open_key))
        counts: dict[tuple[str, str], int] = {}
        for field, value in raw.items():
            env, _, tenant = (field.decode() if isinstance(field, bytes) else field).partition("\n")
            counts[env, tenant] = int(value)
        return counts

    async def close(self) -> None:
        return None
