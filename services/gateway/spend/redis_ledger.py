"""Fleet-wide spend in dollars: one Redis hash every replica charges and reads.

One Redis hash of integer nano-dollar totals, `fn:<name>` and `pool:<name>`, which every replica charges
(`SPEND_ADD`, both fields in one script) and reads before admitting a capped call (spend/meter.py holds the
rule). Integers, so totals are exact whatever the order of the charges."""

from __future__ import annotations

from collections.abc import Sequence

from rewardfleet.services.gateway.state_store.redis_client import RedisStore
from rewardfleet.services.gateway.state_store.redis_scripts import SPEND_ADD, SPEND_ALL, SPEND_READ


class RedisSpendLedger:
    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.key = store.key("spend")
        self._add = store.script(SPEND_ADD)
        self._read = store.script(SPEND_READ)
        self._all = store.script(SPEND_ALL)

    async def add(self, reward_fn: str, pool: str, nano_usd: int) -> None:
        args = [f"fn:{reward_fn}", f"pool:{pool}", nano_usd]
        await self.store.call("spend_add", self.store.eval(self._add, [self.key], args))

    async def read(self, fields: Sequence[str]) -> list[int]:
        values = await self.store.call("spend_read", self.store.eval(self._read, [self.key], list(fields)))
        return [int(v) if v is not None else 0 for v in values]

    async def snapshot(self) -> dict[str, int]:
        flat = await self.store.call("spend_read", self.store.eval(self._all, [self.key], []))
        return {_text(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
