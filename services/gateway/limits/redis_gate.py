"""Fleet-wide budgets of one reward function: max_concurrency, requests_per_minute, tokens_per_minute.

Concurrency is a sorted set of leases (token -> expiry): `SLOT_ACQUIRE` drops expired leases and adds one
if fewer than `max_concurrency` are held, in one script. A holder's lease is renewed (redis_leases.py), so a
replica that dies holding slots gives them back within `lease_s`. Release publishes, which wakes waiters.
With tenants, `hold_for` takes the slot through redis_fair_slots.py instead: the same leases, named by tenant,
and tenants/shares.py's admission rule in the script (assured shares and a headroom, fleet-wide).

RPM and TPM are token buckets (refilled continuously, starting full, like admission.TokenBucket) kept in
Redis hashes; `BUCKETS_TAKE` refills both and takes from both only when both allow, atomically, else answers
how long to wait. Within one replica, waiters go one at a time (FIFO, as in-process); across replicas the
first to ask after a refill wins. When the call's result reports token usage (`extra.usage`), `settle`
charges the difference between the real and the estimated tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from rewardfleet.services.gateway.errors import StateStoreUnavailable
from rewardfleet.services.gateway.limits.redis_fair_slots import FairSlots
from rewardfleet.services.gateway.limits.slot_claim import SlotClaim
from rewardfleet.services.gateway.state_store.redis_client import RedisStore
from rewardfleet.services.gateway.state_store.redis_leases import Leases, new_token
from rewardfleet.services.gateway.state_store.redis_scripts import (
    BUCKET_SETTLE,
    BUCKETS_TAKE,
    SLOT_ACQUIRE,
    SLOT_RELEASE,
    SLOT_RENEW,
)


class RedisCharge:
    """`Charge` (limits/function_limits.py) over the gate's Redis TPM bucket: `settle` asks the gate to
    correct the bucket by the difference between the reported and the estimated tokens."""

    def __init__(self, gate: RedisGate, estimated: int) -> None:
        self.gate = gate
        self.estimated = estimated
        self.pending: asyncio.Task[object] | None = None

    def settle(self, real_tokens: int) -> None:
        if self.gate.tpm is None or real_tokens == self.estimated:
            return
        delta = real_tokens - min(self.estimated, int(self.gate.tpm))
        self.estimated = real_tokens
        self.pending = self.gate.correct_tokens(delta)


class RedisGate:
    def __init__(
        self,
        store: RedisStore,
        fn_name: str,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        lease_s: float,
    ) -> None:
        self.store = store
        self.max_concurrency = max_concurrency
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute
        self.lease_ms = max(1, int(lease_s * 1000))
        base = store.key("b", "{" + fn_name + "}")
        self.slots_key, self.channel = base + ":slots", base + ":slots"
        self.rpm_key, self.tpm_key = base + ":rpm", base + ":tpm"
        self._acquire = store.script(SLOT_ACQUIRE)
        self._leases = Leases(store, "slot_renew", store.script(SLOT_RENEW), lease_s)
        self._release = store.script(SLOT_RELEASE)
        self._take = store.script(BUCKETS_TAKE)
        self._settle = store.script(BUCKET_SETTLE)
        self._turn = asyncio.Lock()  # this replica's waiters ask the buckets one at a time, in order
        self.fair = FairSlots(store, self.slots_key, self.lease_ms)  # tenants' shares (hold_for)

    def correct_tokens(self, delta: int) -> asyncio.Task[object]:
        """Charge the TPM bucket `delta` more tokens (a refund when negative), in the background: a failed
        correction is counted by the store; the answer to the caller does not wait for it."""
        task: asyncio.Task[object] = asyncio.get_running_loop().create_task(
            self.store.call(
                "bucket_settle", self.store.eval(self._settle, [self.tpm_key], [self.tpm or 0, delta])
            )
        )
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    def hold(self, tokens: int) -> AbstractAsyncContextManager[RedisCharge]:
        return self._hold(tokens)

    def hold_for(self, tokens: int, claim: SlotClaim) -> AbstractAsyncContextManager[RedisCharge]:
        """`hold` for a tenant's call: it takes a slot only as tenants/shares.py's rule admits it."""
        return self._hold(tokens, claim)

    @asynccontextmanager
    async def _hold(self, tokens: int, claim: SlotClaim | None = None) -> AsyncIterator[RedisCharge]:
        if self.max_concurrency is None:
            await self._pace(tokens)
            yield RedisCharge(self, tokens)
            return
        token = new_token()
        if claim is None:
            await self._take_slot(token)
        else:
            token = f"{claim.tenant}|{token}"  # the lease names its tenant: the script counts its slots
            await self._take_fair_slot(token, claim)
        lease = self._leases.hold([self.slots_key], [token, self.lease_ms])
        try:
            await self._pace(tokens)
            yield RedisCharge(self, tokens)
        finally:
            self._leases.drop(lease)
            # A release that fails must not fail a call that already ran (its caller would retry and run it
            # again): the store counts the error and the lease frees the slot within lease_s.
            with contextlib.suppress(StateStoreUnavailable):
                await self.store.call(
                    "slot_release", self.store.eval(self._release, [self.slots_key], [token, self.channel])
                )

    async def _take_slot(self, token: str) -> None:
        store = self.store
        args: list[str | int] = [token, self.lease_ms, self.max_concurrency or 0]
        if await store.call("slot_acquire", self.store.eval(self._acquire, [self.slots_key], args)):
            return
        async with store.notifier.listen(self.channel) as inbox:
            while not await store.call(
                "slot_acquire", self.store.eval(self._acquire, [self.slots_key], args)
            ):
                await inbox.wait(store.settings.poll_s)

    async def _take_fair_slot(self, member: str, claim: SlotClaim) -> None:
        capacity = self.max_concurrency or 0
        try:
            if await self.fair.try_take(member, capacity, claim):
                return
            async with self.store.notifier.listen(self.channel) as inbox:
                while not await self.fair.try_take(member, capacity, claim):
                    await inbox.wait(self.store.settings.poll_s)
        except BaseException:
            await asyncio.shield(self.fair.forget(member))  # no longer waiting: its demand goes
            raise

    async def _pace(self, tokens: int) -> None:
        if self.rpm is None and self.tpm is None:
            return
        args: list[float] = [self.rpm or 0, self.tpm or 0, tokens]
        keys = [self.rpm_key, self.tpm_key]
        async with self._turn:
            while True:
                wait_ms = await self.store.call("bucket_take", self.store.eval(self._take, keys, args))
                if not wait_ms:
                    return
                await asyncio.sleep(int(wait_ms) / 1000)
