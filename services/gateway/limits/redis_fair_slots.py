"""A function's fleet-wide slots shared by tenants, in one Lua script.

A function's fleet-wide slots shared by tenants: tenants/shares.py's admission rule, in one Lua script
(its `BURST` is the 2 in `within`).

The slots are redis_gate.py's sorted set of leases; a tenant's lease is named `<tenant>|<token>`, so the
script counts each tenant's slots in use from the live leases (a dead replica's expire within `lease_s`, and
its tenants' counts with them). A call that may not take a slot yet stays registered as waiting, with its
replica's count of that tenant's waiting calls, under a short lease of its own (`wait_lease_ms`, renewed by
every ask), so every replica sees each tenant's demand. One script reads all of it and takes a slot only
when the rule admits the caller: the bound holds across replicas without a global queue.

Keys (one hash tag, the function's): slots (zset member -> lease expiry), waiters (zset member -> expiry),
counts (hash member -> calls waiting), parties (hash tenant -> "weight rank").
"""

from __future__ import annotations

import contextlib

from rewardfleet.services.gateway.errors import StateStoreUnavailable
from rewardfleet.services.gateway.limits.slot_claim import SlotClaim
from rewardfleet.services.gateway.state_store.redis_client import RedisStore

# ARGV: member, tenant, lease_ms, capacity, headroom, weight, rank, waiting, wait_lease_ms. -> 1 taken | 0 not
FAIR_SLOT_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local slots, waiters, counts, info = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local member, me = ARGV[1], ARGV[2]
local lease_ms, cap, headroom = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local wait_ms = tonumber(ARGV[9])
redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
for _, m in ipairs(redis.call('ZRANGEBYSCORE', waiters, '-inf', now)) do redis.call('HDEL', counts, m) end
redis.call('ZREMRANGEBYSCORE', waiters, '-inf', now)
redis.call('HSET', info, me, ARGV[6] .. ' ' .. ARGV[7])
redis.call('ZADD', waiters, now + wait_ms, member)
redis.call('HSET', counts, member, ARGV[8])
local keep = math.max(lease_ms, wait_ms)
redis.call('PEXPIRE', waiters, keep)
redis.call('PEXPIRE', counts, keep)
redis.call('PEXPIRE', info, keep)
local function owner(m)
  local i = string.find(m, '|', 1, true)
  if i then return string.sub(m, 1, i - 1) end
  return ''
end
local held, waiting, parties, total = {}, {}, {}, 0
for _, m in ipairs(redis.call('ZRANGE', slots, 0, -1)) do
  local o = owner(m)
  held[o] = (held[o] or 0) + 1
  parties[o] = true
  total = total + 1
end
local flat = redis.call('HGETALL', counts)
for i = 1, #flat, 2 do
  local o = owner(flat[i])
  waiting[o] = (waiting[o] or 0) + tonumber(flat[i + 1])
  parties[o] = true
end
local free = cap - total
if free <= 0 then return 0 end
local weight, rank = {}, {}
for o, _ in pairs(parties) do
  local v = redis.call('HGET', info, o)
  weight[o], rank[o] = 1, 1000000
  if v then
    local sp = string.find(v, ' ', 1, true)
    weight[o], rank[o] = tonumber(string.sub(v, 1, sp - 1)), tonumber(string.sub(v, sp + 1))
  end
end
local mine = rank[me]
local sum = 0
for o, _ in pairs(parties) do
  if (waiting[o] or 0) > 0 and rank[o] < mine then return 0 end
  if rank[o] <= mine then sum = sum + weight[o] end
end
local function within(o)
  return (held[o] or 0) + (waiting[o] or 0) <= cap * weight[o] / sum + 2 * headroom
end
local ok = within(me) or free > headroom
if not ok and (held[me] or 0) < cap * weight[me] / sum then
  ok = true
  for o, _ in pairs(parties) do
    if o ~= me and rank[o] <= mine and within(o) then ok = false end
  end
end
if not ok then return 0 end
redis.call('ZADD', slots, now + lease_ms, member)
redis.call('PEXPIRE', slots, lease_ms)
redis.call('ZREM', waiters, member)
redis.call('HDEL', counts, member)
return 1
"""

# ARGV: member. A waiter that gave up (cancelled, or its store failed) stops counting as demand.
FAIR_SLOT_FORGET = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""


class FairSlots:
    """The script's side keys of one function's slots (`slots_key` is redis_gate.py's)."""

    def __init__(self, store: RedisStore, slots_key: str, lease_ms: int) -> None:
        self.store = store
        self.keys = [slots_key, slots_key + ":waiting", slots_key + ":demand", slots_key + ":parties"]
        self.lease_ms = lease_ms
        self.wait_lease_ms = max(1000, int(3000 * store.settings.poll_s))  # > 2 asks of a live waiter
        self._acquire = store.script(FAIR_SLOT_ACQUIRE)
        self._forget = store.script(FAIR_SLOT_FORGET)

    async def try_take(self, member: str, capacity: int, claim: SlotClaim) -> bool:
        args = [
            member,
            claim.tenant,
            self.lease_ms,
            capacity,
            claim.headroom,
            repr(float(claim.weight)),
            claim.rank,
            max(1, claim.waiting()),
            self.wait_lease_ms,
        ]
        return bool(
            await self.store.call("fair_slot_acquire", self.store.eval(self._acquire, self.keys, args))
        )

    async def forget(self, member: str) -> None:
        with contextlib.suppress(StateStoreUnavailable):
            await self.store.call("fair_slot_forget", self.store.eval(self._forget, self.keys[1:3], [member]))
