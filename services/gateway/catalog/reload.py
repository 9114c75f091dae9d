"""Hot reload: re-read the reward-function files and swap the served table without dropping a request.

A reload loads everything again (user folders, config `path` files, graders, composites, fallbacks, group
functions) with `on_load_error: fail`, whatever the config says: a broken file rejects the whole reload and
the old table keeps serving. On success the whole `Catalog` (functions, dispatch table, group functions,
graders) is replaced in one assignment. A request holds the `RewardFunction` it resolved, so calls in flight
finish on the old version; new requests get the new one. User files (reward functions, group functions,
python graders) are imported under content-addressed module names (execution/loader.py), so an edited file
is a new module in the gateway and in every worker process, while the old module stays for calls still
using it.

Built-in package modules (`rewardfleet.reward_fns.*`, `rewardfleet.reward_fns.groups.*`, or module-path
`path:` entries) are installed code and are not re-imported: change them by redeploying.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp

from rewardfleet.services.gateway.catalog.build import Catalog, build_catalog
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.core.registry import load_functions
from rewardfleet.services.gateway.core.scoring import Scorer
from rewardfleet.services.gateway.errors import GatewayError, ReloadFailed
from rewardfleet.services.gateway.execution.contain import in_thread


class Reloader:
    """Owns the catalog being served: `catalog` is read by every request, `reload()` replaces it."""

    def __init__(
        self,
        config: GatewayConfig,
        scorer: Scorer,
        http_client: aiohttp.ClientSession | None,
        catalog: Catalog,
    ) -> None:
        self.config = config.model_copy(
            update={"loading": config.loading.model_copy(update={"on_load_error": "fail"})}
        )
        self.scorer = scorer
        self.http_client = http_client
        self.catalog = catalog
        self.generation = 0
        self._lock = asyncio.Lock()
        # Run on every reload before the swap, each returning its part of the answer (tenants/: the keys);
        # one that raises rejects the whole reload.
        self.hooks: dict[str, Callable[[], Any]] = {}

    def _load(self) -> Catalog:
        loaded = load_functions(self.config)
        if self.scorer.pool is None:
            sync = sorted(name for name, fn in loaded.items() if not fn.is_async)
            if sync:
                raise ReloadFailed(
                    f"sync functions {sync} need the worker pool, which was not started (no sync function at "
                    "start-up); restart the gateway"
                )
        return build_catalog(self.config, loaded, self.scorer, self.http_client)

    async def reload(self) -> dict[str, Any]:
        async with self._lock:
            try:
                catalog = await in_thread(self._load)  # a module's SystemExit rejects the reload
            except GatewayError as exc:
                raise ReloadFailed(
                    f"reload rejected, the previous functions keep serving: {exc.message}"
                ) from None
            except Exception as exc:
                raise ReloadFailed(
                    f"reload rejected, the previous functions keep serving: {type(exc).__name__}: {exc}"
                ) from None
            extra = {}
            for name, hook in self.hooks.items():
                try:
                    extra[name] = await in_thread(hook)
                except Exception as exc:
                    raise ReloadFailed(
                        f"reload rejected, the previous functions and {name} keep serving: {exc}"
                    ) from None
            old = self.catalog.functions
            self.catalog = catalog
            self.generation += 1
            table = catalog.functions
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
                **extra,
            }
