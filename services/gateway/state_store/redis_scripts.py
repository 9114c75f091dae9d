"""The Lua scripts of the Redis backend.

A script runs atomically in Redis, so a check and the write that depends on it can never interleave with
another replica's (no read-modify-write races). Time comes from Redis' own clock (`TIME`), so replicas with
skewed clocks still agree on deadlines and refill rates.

Replies are flat arrays of strings and integers; the callers in redis_cache.py, redis_budget.py and
redis_groups.py document what they send and read.
"""

from __future__ import annotations

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# A FIFO index (a sorted set whose oldest entries are popped): the score is Redis' clock in microseconds, and
# never below the newest score already there plus one, so two entries added in the same tick (a pipeline of
# finishes lands within one millisecond) keep their order instead of tying and popping by member name.
_FIFO_ADD = """
local function fifo_add(index, member)
  local order = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local newest = redis.call('ZREVRANGE', index, 0, 0, 'WITHSCORES')
  if newest[2] and tonumber(newest[2]) >= order then order = tonumber(newest[2]) + 1 end
  redis.call('ZADD', index, order, member)
end
"""

# ---- results (redis_cache.py) ------------------------------------------------------------------------------
# KEYS: result, lease, outcome. ARGV: token, lease_ms.
# -> {1, result} cached | {2, ""} lease taken, the caller runs | {0, holder} someone runs it | {3, outcome}
CACHE_CLAIM = """
local v = redis.call('GET', KEYS[1])
if v then return {1, v} end
local holder = redis.call('GET', KEYS[2])
if holder then
  local out = redis.call('GET', KEYS[3])
  if out and string.sub(out, 1, 32) == holder then return {3, string.sub(out, 33)} end
  return {0, holder}
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return {2, ''}
"""

# KEYS: lease, outcome. ARGV: token. A waiter that saw `token` running: its outcome, or whether it still runs.
# -> {3, outcome} | {0, ""} still running | {4, ""} gone without an outcome (crashed or cancelled)
CACHE_CHECK = """
local out = redis.call('GET', KEYS[2])
if out and string.sub(out, 1, 32) == ARGV[1] then return {3, string.sub(out, 33)} end
if redis.call('GET', KEYS[1]) == ARGV[1] then return {0, ''} end
return {4, ''}
"""

# KEYS: result, lease, outcome, index. ARGV: token, result json, cacheable (1/0), ttl_ms, max_entries,
# outcome_ttl_ms, channel. Stores the outcome for the run's waiters (any status) and, when cacheable, the
# result (FIFO-bounded by `index`); frees the lease; wakes the waiters.
CACHE_FINISH = (
    _NOW
    + _FIFO_ADD
    + """
redis.call('SET', KEYS[3], ARGV[1] .. ARGV[2], 'PX', ARGV[6])
local max = tonumber(ARGV[5])
if ARGV[3] == '1' and max > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])
  fifo_add(KEYS[4], KEYS[1])
  local n = redis.call('ZCARD', KEYS[4])
  if n > max then
    local old = redis.call('ZPOPMIN', KEYS[4], n - max)
    for i = 1, #old, 2 do redis.call('DEL', old[i]) end
  end
end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('PUBLISH', ARGV[7], '1')
return 1
"""
)

# KEYS: lease. ARGV: token, channel. A run that ended without a result gives its lease back.
CACHE_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
redis.call('PUBLISH', ARGV[2], '1')
return 1
"""

# A batch of renewals (redis_leases.py): KEYS: lease 1..n. ARGV: token 1, lease_ms 1, ..., token n, lease_ms n
# (one pair per key).
# Extends each lease still held by its token. -> one 1 (renewed) or 0 (lost) per key, in order.
LEASE_RENEW = """
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[2 * i - 1] then
    redis.call('PEXPIRE', key, ARGV[2 * i])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
"""

# ---- budgets (redis_budget.py) -----------------------------------------------------------------------------
# KEYS: slots (zset token -> lease expiry). ARGV: token, lease_ms, max. -> 1 taken | 0 full
SLOT_ACQUIRE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
)

# A batch of renewals (redis_leases.py): KEYS: slots 1..n (a key may repeat). ARGV: token 1, lease_ms 1, ...,
# token n, lease_ms n. -> one 1 (renewed) or 0 (lost) per key, in order.
SLOT_RENEW = (
    _NOW
    + """
local out = {}
for i, key in ipairs(KEYS) do
  local token, ms = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  if redis.call('ZSCORE', key, token) then
    redis.call('ZADD', key, now + ms, token)
    if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
"""
)

# KEYS: slots. ARGV: token, channel.
SLOT_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], '1')
return 1
"""

_BUCKET_LEVEL = """
local function level(key, cap)
  local v = redis.call('HMGET', key, 'l', 's')
  local l = tonumber(v[1]) or cap
  local s = tonumber(v[2]) or now
  return math.min(cap, l + (now - s) * cap / 60000)
end
"""

# Token buckets refilled continuously, `cap` per minute, starting full (like admission.TokenBucket).
# KEYS: rpm bucket, tpm bucket. ARGV: rpm (0 = none), tpm (0 = none), tokens.
# -> 0 when one request and `tokens` were taken from both, else the ms to wait before trying again.
BUCKETS_TAKE = (
    _NOW
    + _BUCKET_LEVEL
    + """
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local wait, lr, lt, need = 0, 0, 0, 0
if rpm > 0 then
  lr = level(KEYS[1], rpm)
  if lr < 1 then wait = (1 - lr) * 60000 / rpm end
end
if tpm > 0 then
  lt = level(KEYS[2], tpm)
  need = math.min(tonumber(ARGV[3]), tpm)
  if lt < need then wait = math.max(wait, (need - lt) * 60000 / tpm) end
end
if wait > 0 then return math.max(1, math.ceil(wait)) end
if rpm > 0 then
  redis.call('HSET', KEYS[1], 'l', tostring(lr - 1), 's', tostring(now))
  redis.call('PEXPIRE', KEYS[1], 120000)
end
if tpm > 0 then
  redis.call('HSET', KEYS[2], 'l', tostring(lt - need), 's', tostring(now))
  redis.call('PEXPIRE', KEYS[2], 120000)
end
return 0
"""
)

# KEYS: tpm bucket. ARGV: tpm, delta tokens (real - charged; negative refunds). The level may go below zero:
# a call that used more than estimated makes the next ones wait for the debt.
BUCKET_SETTLE = (
    _NOW
    + _BUCKET_LEVEL
    + """
local cap = tonumber(ARGV[1])
local l = math.min(cap, level(KEYS[1], cap) - tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'l', tostring(l), 's', tostring(now))
redis.call('PEXPIRE', KEYS[1], 120000)
return 1
"""
)

# ---- groups (redis_groups.py) ------------------------------------------------------------------------------
# meta hash: size, fn, deadline (ms, Redis clock), state (open|completing|done|timeout), scored, received,
# until (completing lease), partial (1 when judged at its deadline over the members present). members hash:
# member -> "" while scoring, then its payload. final hash: member -> its answer. open zset: gid -> deadline +
# grace. done zset: gid -> finish time (trimmed to `kept`).

# KEYS: meta, members, open. ARGV: gid, member, size, fn, timeout_ms, max_open, keep_ms.
# -> {"new"|"dup", ms to deadline, open groups (when it opened one, else 0)} | {"answered", 0|1 member known}
#    | {"open_full", n} | {"size", size} | {"fn", fn} | {"full", size}
#    | {"late", members answered}: not a member of a group that timed out or was judged partial
GROUP_JOIN = (
    _NOW
    + """
local st = redis.call('HGET', KEYS[1], 'state')
if st == 'done' or st == 'timeout' then
  local known = redis.call('HEXISTS', KEYS[2], ARGV[2])
  if known == 0 and (st == 'timeout' or redis.call('HGET', KEYS[1], 'partial') == '1') then
    return {'late', tonumber(redis.call('HGET', KEYS[1], 'received') or '0')}
  end
  return {'answered', known}
end
local deadline
if not st then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local n = redis.call('ZCARD', KEYS[3])
  if n >= tonumber(ARGV[6]) then return {'open_full', n} end
  deadline = now + tonumber(ARGV[5])
  redis.call('HSET', KEYS[1], 'size', ARGV[3], 'fn', ARGV[4], 'deadline', deadline, 'state', 'open',
    'scored', 0)
  redis.call('ZADD', KEYS[3], deadline + 10000, ARGV[1])
  local ttl = tonumber(ARGV[5]) + tonumber(ARGV[7])
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('HSET', KEYS[2], ARGV[2], '')
  redis.call('PEXPIRE', KEYS[2], ttl)
  return {'new', deadline - now, n + 1}
end
local size = redis.call('HGET', KEYS[1], 'size')
if size ~= ARGV[3] then return {'size', size} end
if redis.call('HGET', KEYS[1], 'fn') ~= ARGV[4] then return {'fn', redis.call('HGET', KEYS[1], 'fn')} end
deadline = tonumber(redis.call('HGET', KEYS[1], 'deadline'))
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return {'dup', deadline - now, 0} end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then return {'full', ARGV[3]} end
redis.call('HSET', KEYS[2], ARGV[2], '')
return {'new', deadline - now, 0}
"""
)

# KEYS: meta, members. ARGV: member, payload, completion lease ms.
# -> {"complete"} this caller completes the group | {state} otherwise ("open", "timeout", ...; "" if gone)
GROUP_REPORT = (
    _NOW
    + """
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {''} end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if st ~= 'open' then return {st} end
local scored = redis.call('HINCRBY', KEYS[1], 'scored', 1)
if scored >= tonumber(redis.call('HGET', KEYS[1], 'size')) then
  redis.call('HSET', KEYS[1], 'state', 'completing', 'until', now + tonumber(ARGV[3]))
  return {'complete'}
end
return {'open'}
"""
)

# Shared by FINISH and EXPIRE: leave the open set, join the done set, forget the oldest beyond `kept`.
_GROUP_RETIRE = """
local function retire(gid, kept, prefix)
  redis.call('ZREM', KEYS[3], gid)
  if kept <= 0 then return end
  fifo_add(KEYS[4], gid)
  local n = redis.call('ZCARD', KEYS[4])
  if n > kept then
    local old = redis.call('ZPOPMIN', KEYS[4], n - kept)
    for i = 1, #old, 2 do
      local base = prefix .. '{' .. old[i] .. '}'
      redis.call('DEL', base .. ':meta', base .. ':m', base .. ':f')
    end
  end
end
"""

# KEYS: meta, final, open, done. ARGV: gid, kept, prefix, channel, then member, answer pairs.
GROUP_FINISH = (
    _NOW
    + _FIFO_ADD
    + _GROUP_RETIRE
    + """
if redis.call('HGET', KEYS[1], 'state') ~= 'completing' then return 0 end
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
redis.call('HSET', KEYS[1], 'state', 'done', 'received', (#ARGV - 4) / 2)
retire(ARGV[1], tonumber(ARGV[2]), ARGV[3])
redis.call('PUBLISH', ARGV[4], '1')
return 1
"""
)

# KEYS: meta, members, open, done. ARGV: gid, kept, prefix, channel, partial lease ms (0: no partial judging).
# An open group past its deadline with a member scored and a partial lease: this caller judges the members
# present, leased like a completer -> {"partial", joined}. Otherwise times the group out when its deadline (or
# a completer's lease) has passed. -> {state, received}
GROUP_EXPIRE = (
    _NOW
    + _FIFO_ADD
    + _GROUP_RETIRE
    + """
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {'', 0} end
local lease = tonumber(ARGV[5])
if st == 'open' and lease > 0 and now >= tonumber(redis.call('HGET', KEYS[1], 'deadline'))
  and tonumber(redis.call('HGET', KEYS[1], 'scored')) > 0 then
  redis.call('HSET', KEYS[1], 'state', 'completing', 'until', now + lease, 'partial', 1)
  return {'partial', redis.call('HLEN', KEYS[2])}
end
local expired = (st == 'open' and now >= tonumber(redis.call('HGET', KEYS[1], 'deadline')))
  or (st == 'completing' and now >= tonumber(redis.call('HGET', KEYS[1], 'until')))
if expired then
  st = 'timeout'
  redis.call('HSET', KEYS[1], 'state', st, 'received', redis.call('HLEN', KEYS[2]))
  retire(ARGV[1], tonumber(ARGV[2]), ARGV[3])
  redis.call('PUBLISH', ARGV[4], '1')
end
return {st, tonumber(redis.call('HGET', KEYS[1], 'received') or '0')}
"""
)

# Plain reads, as scripts so that they ride in the automatic pipeline.
GROUP_READ = "return redis.call('HGET', KEYS[1], ARGV[1])"
GROUP_COLLECT = "return redis.call('HGETALL', KEYS[1])"

# KEYS: final, meta. ARGV: member, answer, channel. One member's own answer after a timeout.
GROUP_ANSWER = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.max(redis.call('PTTL', KEYS[2]), 1000))
redis.call('PUBLISH', ARGV[3], '1')
return 1
"""

# ---- spend in dollars (redis_spend.py) ---------------------------------------------------------------------
# KEYS: the spend hash. ARGV: function field, pool field, nano-dollars. Both totals move together.
SPEND_ADD = """
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[1], ARGV[2], ARGV[3])
return 1
"""
# KEYS: the spend hash. ARGV: fields. -> their values (nil for a field never charged)
SPEND_READ = "return redis.call('HMGET', KEYS[1], unpack(ARGV))"
SPEND_ALL = "return redis.call('HGETALL', KEYS[1])"
