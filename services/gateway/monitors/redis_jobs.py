"""A background job run once per fleet, on Redis (`jobs.py` says what a job board is).

The holder (`lead` returns True) runs the job and `publish`es what the others need to act alike (e.g. the
judge probes' reports and which pools to refuse); the others `read` it. The lease lasts `lease_s` and is
renewed by each `lead` call of its holder, so a holder that died hands the job to another process within
`lease_s`. Redis is the judge of who holds it: `SET NX PX` to take, a compare-and-extend script to renew.
"""

from __future__ import annotations

import json
from typing import Any

from rewardfleet.services.gateway.state_store.redis_client import RedisStore
from rewardfleet.services.gateway.state_store.redis_leases import new_token

# KEYS: lease. ARGV: token, lease_ms. -> 1 held by token (taken or renewed) | 0 held by another
LEAD = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


class RedisJobBoard:
    def __init__(self, store: RedisStore, name: str, lease_s: float) -> None:
        self.store = store
        self.lease_key = store.key("job", name, "lease")
        self.board_key = store.key("job", name, "board")
        self.lease_ms = max(1, int(lease_s * 1000))
        self.token = new_token()
        self._lead = store.script(LEAD)

    async def lead(self) -> bool:
        held = await self.store.call(
            "job_lead", self._lead(keys=[self.lease_key], args=[self.token, self.lease_ms])
        )
        return bool(held)

    async def publish(self, board: dict[str, Any], ttl_s: float) -> None:
        text = json.dumps(board)
        await self.store.call(
            "job_publish", self.store.client.set(self.board_key, text, px=max(1, int(ttl_s * 1000)))
        )

    async def read(self) -> dict[str, Any] | None:
        text = await self.store.call("job_read", self.store.client.get(self.board_key))
        return None if text is None else json.loads(text)

    async def release(self) -> None:
        """Give the lease back at shutdown, so another process takes the job at once."""
        release = self.store.script(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
        )
        await self.store.call("job_release", release(keys=[self.lease_key], args=[self.token]))
