"""Hot reload: re-read the reward-function files and swap the served table without dropping a request.

A reload loads everything again (user folders, config `path` files, graders, composites, fallbacks, group
functions) with `on_load_error: fail`, whatever the config says: a broken file rejects the whole reload and
the old table keeps serving. On success the dispatcher is replaced in one assignment. A request holds the
`RewardFunction` it resolved, so calls in flight finish on the old version; new requests get the new one.
User files are imported under content-addressed module names (registry.py), so an edited file is a new module
in the gateway and in every worker process, while the old module stays for calls still using it.

Built-in package modules (`reward_fns.*`, or module-path `path:` entries) are installed code and are not
re-imported: change them by redeploying.
"""

from __future__ import annotations

import asyncio
from typing import Any

from services.gateway.config import GatewayConfig
from services.gateway.core.dispatch import Dispatcher
from services.gateway.core.registry import RewardFunction, load_functions
from services.gateway.errors import GatewayError
from services.gateway.features.build import Features, build_functions
from services.gateway.features.groups import load_group_functions


class ReloadFailed(GatewayError):
    status_code = 409
    type = "ReloadFailed"


class Reloader:
    def __init__(self, config: GatewayConfig, gateway: Any, features: Features, has_pool: bool) -> None:
        self.config = config.model_copy(update={"on_load_error": "fail"})
        self.gateway = gateway
        self.features = features
        self.has_pool = has_pool
        self.generation = 0
        self._lock = asyncio.Lock()

    def _load(self) -> tuple[dict[str, RewardFunction], dict[str, Any]]:
        loaded = load_functions(self.config)
        if not self.has_pool:
            sync = sorted(name for name, fn in loaded.items() if not fn.is_async)
            if sync:
                raise ReloadFailed(
                    f"sync functions {sync} need the worker pool, which was not started (no sync function at "
                    "start-up); restart the gateway"
                )
        group_functions = load_group_functions(self.config.groups)
        table = build_functions(self.config, loaded, self.features.graders, self.features.scorer_of)
        return table, group_functions

    async def reload(self) -> dict[str, Any]:
        async with self._lock:
            try:
                table, group_functions = await asyncio.to_thread(self._load)
            except GatewayError as exc:
                raise ReloadFailed(
                    f"reload rejected, the previous functions keep serving: {exc.message}"
                ) from None
            except Exception as exc:
                raise ReloadFailed(
                    f"reload rejected, the previous functions keep serving: {type(exc).__name__}: {exc}"
                ) from None
            old = self.gateway.functions
            scorer = self.features.scorer_of()
            scorer.dispatcher = Dispatcher(table, self.config.dispatch, self.config.default_reward_fn)
            self.gateway.functions = table
            self.features.group_functions = group_functions
            if self.features.groups is not None:
                self.features.groups.functions = group_functions
            self.generation += 1
            changed = {
                name: {"old": old[name].version, "new": fn.version}
                for name, fn in table.items()
                if name in old and old[name].version != fn.version
            }
            return {
                "generation": self.generation,
                "added": sorted(set(table) - set(old)),
                "removed": sorted(set(old) - set(table)),
                "changed": changed,
                "versions": {name: fn.version for name, fn in table.items()},
            }
