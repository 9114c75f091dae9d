"""Master-key probes on by default for the judge pools a fleet runs (docs/judge_monitoring.md).

When a `rewardfleet up` config runs a pool of kind `judge` and its gateway section does not set
`judge_probes` at all, the gateway probes each such pool through one built-in judge function that names it
(`judge` first, then `rule_then_judge`, `rubric`), or through the built-in `judge` for a pool named `judge`
(its default pool), so `rewardfleet status` shows the pool's false-positive ratio. Setting `judge_probes`
(e.g. `judge_probes: {functions: []}` to turn probes off) leaves it as written.

A CPU judge pool refuses a request asking for more tokens than its `max-new-tokens-limit`, and every refused
probe counts towards opening the pool's circuit in its router: `probe_max_tokens` tells the probes each CPU
judge pool's limit (`judge_probes.pool_max_tokens`, unless the config sets it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rewardfleet.services.model_server.config import ModelServerSettings

# Built-in functions a probe can call with a master key, a question and a reference answer.
PROBEABLE = ("judge", "rule_then_judge", "rubric")


def default_probe_functions(judge_pools: set[str], functions: dict[str, Any]) -> list[str]:
    """One probeable built-in function per judge pool, by its reward_kwargs `pool` (default `judge`)."""
    chosen: dict[str, str] = {}
    for name in PROBEABLE:
        cfg = functions.get(name)
        if cfg is not None and getattr(cfg, "path", None) is not None:
            continue  # a user's own file under a built-in name
        pool = "judge" if cfg is None else str((cfg.reward_kwargs or {}).get("pool", "judge"))
        if pool in judge_pools and pool not in chosen and (cfg is not None or pool == "judge"):
            chosen[pool] = name
    return list(chosen.values())


def probe_max_tokens(pools: Iterable[tuple[str, Any]]) -> dict[str, int]:
    """The largest max_tokens each CPU judge pool accepts, by name, from `(name, PoolConfig)` pairs: its
    `server_args` `max-new-tokens-limit`, else the CPU model server's default."""
    default = ModelServerSettings.model_fields["max_new_tokens_limit"].default
    limits: dict[str, int] = {}
    for name, pool in pools:
        if pool.kind != "judge" or pool.backend != "cpu":
            continue
        args = pool.server_args
        limit = args.get("max-new-tokens-limit", args.get("max_new_tokens_limit"))
        limits[name] = int(limit) if limit is not None else int(default)
    return limits
