"""The baseline of an encoder: its mean cosine on unrelated sentences, for `similarity`'s rescaling.

An encoder's cosine does not start at 0 for unrelated text: with SGLang's CLS pooling, MiniLM scores
unrelated sentences around 0.5. BERTScore's `rescale_with_baseline` maps a score s to (s - b) / (1 - b), with
b the model's score on unrelated text, so that unrelated pairs land near 0 and identical text stays at 1. Here
b is measured on `UNRELATED` (sentences on unrelated topics, written for this purpose): one embeddings call of
all of them, and the mean cosine over every pair. It is measured once per encoder (pool address and model) and
kept for the life of the process; `similarity`'s `baseline` reward_kwarg gives it instead.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Sequence

UNRELATED: tuple[str, ...] = (
    "The train to the coast leaves every hour from platform four.",
    "Mix the flour and butter until the dough feels like wet sand.",
    "Her violin was tuned a quarter tone below concert pitch.",
    "The committee postponed the vote on the harbour budget.",
    "Glaciers in the northern range have retreated for decades.",
    "He replaced the bicycle chain and oiled the rear derailleur.",
    "Interest rates on savings accounts rose again in March.",
    "The goalkeeper saved a penalty in the final minute.",
    "Photosynthesis turns light, water and carbon dioxide into sugar.",
    "The museum's new wing displays ceramics from the Ming period.",
    "Our server logs rotate at midnight and are kept for a week.",
    "A thunderstorm knocked out power across the valley.",
    "The novel follows three sisters who inherit a vineyard.",
    "Wash the wound with clean water before applying a bandage.",
    "The comet will be visible to the naked eye next spring.",
    "Knitting a sweater takes her about three weekends.",
)

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]


def mean_pairwise_cosine(vectors: Sequence[Sequence[float]], cosine: Callable[..., float]) -> float:
    pairs = list(itertools.combinations(range(len(vectors)), 2))
    return sum(cosine(vectors[i], vectors[j]) for i, j in pairs) / len(pairs)


class BaselineCache:
    """Encoder key -> measured baseline; concurrent first calls for one encoder measure it once."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], float] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def known(self, key: tuple[str, str]) -> float | None:
        return self._values.get(key)

    async def get(self, key: tuple[str, str], embed: Embed, cosine: Callable[..., float]) -> float:
        value = self._values.get(key)
        if value is not None:
            return value
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            value = self._values.get(key)
            if value is None:  # a failed measurement raises to the caller and is tried again next time
                value = mean_pairwise_cosine(await embed(list(UNRELATED)), cosine)
                self._values[key] = value
        return value

    def clear(self) -> None:
        self._values.clear()
