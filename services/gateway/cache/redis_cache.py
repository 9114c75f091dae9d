"""The fleet-wide result cache and in-flight join, in Redis.

Fleet-wide result cache and in-flight join (the Redis side of cache/idempotency.py; same keys,
same semantics).

For a sample with a key, one script (`CACHE_CLAIM`) either answers from the cache, or takes the run's lease
(`SET NX PX`), or names the replica request that holds it. The holder runs the function and `CACHE_FINISH`
stores the outcome for the waiters, caches it when it is "ok", frees the lease and publishes. A waiter listens
on the key's channel *before* it claims, so it cannot miss that publish; it also re-checks every `poll_s`.

The lease lasts `lease_s` and is renewed (redis_leases.py) while the run goes on (a run may wait long for a
judge's budget). A replica that dies mid-run stops renewing, so its lease expires and a waiter takes over:
at most `lease_s` of delay, never a wedged key. Results are FIFO-bounded (`result_cache_size`, an index
sorted set) and expire after `result_cache_ttl_s`; a hit is not re-ordered (no write on the read path).

If the store fails before the run, the request fails with `StateStoreUnavailable` and nothing ran. If it
fails after the run, the caller still gets its result (logged, counted in the errors metric); only the
sharing of that one result is lost. So the caller is answered without waiting for `CACHE_FINISH`'s reply:
the write is sent within `FINISH_LINGER_S` (shared with other finishes), and a gateway that dies before Redis
has it loses only the sharing (its waiters take the lease over after `lease_s`, as for a crash during the
run).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable

from rewardfleet.services.gateway.cache.idempotency import inputs_digest
from rewardfleet.services.gateway.errors import StateStoreUnavailable
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from rewardfleet.services.gateway.state_store.redis_client import RedisStore
from rewardfleet.services.gateway.state_store.redis_leases import Leases, new_token
from rewardfleet.services.gateway.state_store.redis_scripts import (
    CACHE_CHECK,
    CACHE_CLAIM,
    CACHE_FINISH,
    CACHE_RELEASE,
    LEASE_RENEW,
)

logger = logging.getLogger(__name__)
OUTCOME_TTL_MS = 30_000  # long enough for every waiter of a run to read its outcome
# A finish may wait this long for other finishes to share its write to Redis: a step's answers come one or two
# per event-loop turn, and a write each (a system call and a wake-up of Redis) was most of the shared state's
# cost per post (bench/NOTES.md, "Where a post's CPU goes under `--processes 2`"). The lease stays held
# meanwhile, so nothing changes for others: a retry that arrives in the meantime joins this run and has its
# outcome once the write lands.
FINISH_LINGER_S = 0.05
# A claim made while other calls await Redis' replies waits for them (at most this long) to share one write
# with the claims made meanwhile: under a burst, one write per round trip instead of one per arrival. With
# nothing in flight it goes at once (redis_pipeline.py, `busy_linger_s`).
CLAIM_BUSY_LINGER_S = 0.003


class RedisResults:
    def __init__(
        self,
        store: RedisStore,
        mode: str,
        max_entries: int,
        ttl_s: float,
        lease_s: float,
        metrics: GatewayMetrics,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.mode = mode
        self.max_entries = max_entries
        self.ttl_ms = max(1, int(ttl_s * 1000))
        self.lease_ms = max(1, int(lease_s * 1000))
        self.index = store.key("r", "index")
        self._claim = store.script(CACHE_CLAIM)
        self._check = store.script(CACHE_CHECK)
        self._finish = store.script(CACHE_FINISH)
        self._release = store.script(CACHE_RELEASE)
        self._leases = Leases(store, "lease_renew", store.script(LEASE_RENEW), lease_s)

    def key(self, request: ScoreRequest, fn_name: str, fn_version: str) -> Hashable | None:
        if self.mode == "off" or (self.mode == "uid" and request.uid is None):
            return None
        if self.mode == "uid":  # the uid only inside the digest: a Redis key never holds a client string
            return f"{fn_name}|{fn_version}|uid|{inputs_digest(request, with_uid=True).hex()}"
        return f"{fn_name}|{fn_version}|{inputs_digest(request).hex()}"

    def _keys(self, key: Hashable) -> tuple[str, str, str, str]:
        base = self.store.key("r", "{" + str(key) + "}")
        return base + ":res", base + ":lease", base + ":out", base

    @staticmethod
    def _as_cached(raw: bytes, request: ScoreRequest) -> ScoreResult:
        answer = ScoreResult.model_validate_json(raw)  # a fresh object: its two fields set in place, no copy
        answer.uid, answer.cached = request.uid, True
        return answer

    async def run(
        self, key: Hashable, request: ScoreRequest, compute: Callable[[], Awaitable[ScoreResult]]
    ) -> ScoreResult:
        keys = self._keys(key)
        result_key, lease_key, out_key, _ = keys
        token = new_token()
        kind, value = await self.store.call(
            "cache_claim",
            self.store.eval(
                self._claim,
                [result_key, lease_key, out_key],
                [token, self.lease_ms],
                busy_linger_s=CLAIM_BUSY_LINGER_S,
            ),
        )
        if kind == 1:
            self.metrics.result_cache_answered("hit")
            return self._as_cached(value, request)
        if kind == 3:
            self.metrics.result_cache_answered("join")
            return self._as_cached(value, request)
        if kind == 0:
            joined = await self._join(key, value, request)
            if isinstance(joined, ScoreResult):
                return joined
            token = joined
        return await self._own(keys, token, request, compute)

    async def _join(self, key: Hashable, holder: bytes, request: ScoreRequest) -> ScoreResult | str:
        """Wait for the run `holder` holds: its outcome, or the token of a lease this request now holds."""
        result_key, lease_key, out_key, channel = self._keys(key)
        token = new_token()
        async with self.store.notifier.listen(channel) as inbox:
            while True:
                kind, value = await self.store.call(
                    "cache_check", self.store.eval(self._check, [lease_key, out_key], [holder])
                )
                if kind == 3:
                    self.metrics.result_cache_answered("join")
                    return self._as_cached(value, request)
                if kind == 4:  # the run ended without an outcome (crashed, cancelled): claim it again
                    kind, value = await self.store.call(
                        "cache_claim",
                        self.store.eval(
                            self._claim, [result_key, lease_key, out_key], [token, self.lease_ms]
                        ),
                    )
                    if kind in (1, 3):
                        self.metrics.result_cache_answered("hit" if kind == 1 else "join")
                        return self._as_cached(value, request)
                    if kind == 2:
                        return token
                    holder = value
                await inbox.wait(self.store.settings.poll_s)

    async def _own(
        self,
        keys: tuple[str, str, str, str],
        token: str,
        request: ScoreRequest,
        compute: Callable[[], Awaitable[ScoreResult]],
    ) -> ScoreResult:
        """Run `compute` under the lease `token` holds. `keys` are `run`'s own strings, not a second set of
        them held for the whole call (less held by a post in flight)."""
        result_key, lease_key, out_key, channel = keys
        lease = self._leases.hold([lease_key], [token, self.lease_ms])
        try:
            result = await compute()
        except BaseException:
            self._leases.drop(lease)
            with contextlib.suppress(StateStoreUnavailable):
                await self.store.call(
                    "cache_release", self.store.eval(self._release, [lease_key], [token, channel])
                )
            raise
        self._leases.drop(lease)
        cacheable = "1" if result.status == "ok" else "0"
        # Not awaited: the caller's answer does not depend on the store's, and a failed store changes
        # nothing for this caller either way (logged and counted by `send`). The write leaves within
        # FINISH_LINGER_S; until Redis has run it, the lease is still held, so a retry arriving meanwhile
        # joins this run and gets its outcome, never a second run.
        self.store.send(
            "cache_finish",
            self.store.eval(
                self._finish,
                [result_key, lease_key, out_key, self.index],
                [
                    token,
                    result.model_dump_json(),
                    cacheable,
                    self.ttl_ms,
                    self.max_entries,
                    OUTCOME_TTL_MS,
                    channel,
                ],
                linger_s=FINISH_LINGER_S,
            ),
            f"result of {request.uid} not shared",
        )
        return result
