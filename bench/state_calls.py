"""The script calls a `--processes` gateway's own state server has run, read from its INFO commandstats.

The state server's URL (a unix socket and a random password) is in the environment of the gateway's worker
processes (`REWARDFLEET_GATEWAY_STATE_URL`); the benchmarks read it there, as the gateway's own user.
"""

from __future__ import annotations

import redis

STATE_URL_ENV = "REWARDFLEET_GATEWAY_STATE_URL"


def state_url(pids: list[int]) -> str | None:
    """The state server's URL from the first of `pids` whose environment has it."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                entries = f.read().split(b"\0")
        except OSError:
            continue
        for entry in entries:
            name, _, value = entry.partition(b"=")
            if name.decode(errors="replace") == STATE_URL_ENV:
                return value.decode()
    return None


def script_calls(url: str | None) -> int:
    """EVALSHA + EVAL calls the server has run since it started (0 when it cannot be read)."""
    if url is None:
        return 0
    client = redis.Redis.from_url(url, socket_timeout=30)
    try:
        stats = client.info("commandstats")
    except (redis.RedisError, OSError):
        return 0
    finally:
        client.close()
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval"))
