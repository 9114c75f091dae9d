"""Which function scores a sample.

Precedence: the request's `reward_fn`; the config `dispatch` table; exact `DATA_SOURCES` claims of the
modules (and config `data_sources`); glob claims (`aime*`: the longest pattern wins, then the later-loaded
function, so user files beat built-ins); `default_reward_fn`; otherwise a 404 listing what exists.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from collections.abc import Mapping

from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.errors import Undispatchable, UnknownRewardFunction

logger = logging.getLogger(__name__)

_GLOB_CHARS = frozenset("*?[")
_CACHE_LIMIT = 4096  # data_source names come from requests: keep the memo bounded
_MEMO_KEY_CHARS = 64  # a longer data_source is memoised under its digest (a str key never equals bytes)
OTHER_LABEL = "other"


def is_glob(pattern: str) -> bool:
    return not _GLOB_CHARS.isdisjoint(pattern)


class Dispatcher:
    def __init__(
        self,
        functions: Mapping[str, RewardFunction],
        dispatch: Mapping[str, str],
        default_reward_fn: str | None,
    ) -> None:
        self.functions = dict(functions)
        exact: dict[str, str] = {}
        globs: list[tuple[str, str, int]] = []
        for order, fn in enumerate(self.functions.values()):
            for claim in fn.data_sources:
                if is_glob(claim):
                    globs.append((claim, fn.name, order))
                else:
                    if claim in exact and exact[claim] != fn.name:
                        logger.warning(
                            "data_source %r claimed by %r and %r: %r wins (later loaded)",
                            claim,
                            exact[claim],
                            fn.name,
                            fn.name,
                        )
                    exact[claim] = fn.name
        # `dispatch` targets were checked at load time; with on_load_error=skip a target may be missing.
        for data_source, target in dispatch.items():
            if target in self.functions:
                exact[data_source] = target
            else:
                logger.warning("dispatch.%s -> %r ignored: that function was not loaded", data_source, target)
        self.exact = exact
        self.globs = sorted(globs, key=lambda g: (-len(g[0].replace("*", "")), -g[2]))
        self.default = default_reward_fn if default_reward_fn in self.functions else None
        # Keyed by the data_source itself when it is short, else by its digest: the memo's size never
        # depends on what clients send (at most _CACHE_LIMIT keys of at most _MEMO_KEY_CHARS characters).
        self._memo: dict[str | bytes, tuple[RewardFunction | None, str]] = {}

    def resolve(self, reward_fn: str | None, data_source: str) -> tuple[RewardFunction, str]:
        """The function for a sample and the bounded `data_source` metric label (the exact name if the
        table knows it, else the matching glob, else "other")."""
        key: str | bytes = data_source
        if len(data_source) > _MEMO_KEY_CHARS:
            key = hashlib.blake2b(data_source.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        hit = self._memo.get(key)
        if hit is None:
            hit = self._lookup(data_source)
            if len(self._memo) < _CACHE_LIMIT:
                self._memo[key] = hit
        fn, label = hit
        if reward_fn is not None:
            fn = self.functions.get(reward_fn)
            if fn is None:
                raise UnknownRewardFunction(f"unknown reward_fn {reward_fn!r}", **self.available())
        if fn is None:
            raise Undispatchable(
                f"no reward function for data_source {data_source!r} and no default_reward_fn; "
                "pass reward_fn or configure dispatch",
                **self.available(),
            )
        return fn, label

    def _lookup(self, data_source: str) -> tuple[RewardFunction | None, str]:
        name = self.exact.get(data_source)
        if name is not None:
            return self.functions[name], data_source
        for pattern, name, _ in self.globs:
            if fnmatch.fnmatchcase(data_source, pattern):
                return self.functions[name], pattern
        return (self.functions[self.default] if self.default is not None else None), OTHER_LABEL

    def table(self) -> dict[str, str]:
        return {**{pattern: name for pattern, name, _ in reversed(self.globs)}, **self.exact}

    def available(self) -> dict[str, list[str]]:
        return {
            "available_reward_fns": sorted(self.functions),
            "available_data_sources": sorted(self.table()),
        }
