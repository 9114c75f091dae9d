"""Score samples alone, then mixed into random batches of random sizes, and compare bit for bit.

`alone` posts one sample at a time (each is its own batch on the server). `mixed` shuffles the samples with a
seed and fires them in groups of random size (1..`max_group`) as concurrent posts, so the server's batcher
forms batches of whatever arrived together. `compare` counts the samples whose answer differs from the one
scored alone and by how much. `batches_over_one` reads the server's batch-size histogram, so a test can show
the comparison really mixed samples into shared batches.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx

Post = Callable[[aiohttp.ClientSession, Any], Awaitable[Any]]


@dataclass
class Comparison:
    kind: str
    deterministic: bool
    compared: int
    differ: int
    max_abs_diff: float
    batches_over_one: int

    def line(self) -> str:
        mode = "on " if self.deterministic else "off"
        return (
            f"{self.kind:<22} deterministic {mode}: {self.differ:>4} of {self.compared:>4} differ from "
            f"alone, max |diff| {self.max_abs_diff:.3g}"
            + (f"; {self.batches_over_one} batches of >1 formed" if self.batches_over_one >= 0 else "")
        )


REPORT: list[Comparison] = []  # printed by conftest.py at the end of the session


async def _alone(post: Post, samples: Sequence[Any]) -> list[Any]:
    async with aiohttp.ClientSession() as session:
        return [await post(session, s) for s in samples]


async def _mixed(post: Post, samples: Sequence[Any], seed: int, max_group: int) -> list[Any]:
    rng = random.Random(seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    out: list[Any] = [None] * len(samples)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max_group)) as session:
        i = 0
        while i < len(order):
            group = order[i : i + rng.randint(1, max_group)]
            i += len(group)
            answers = await asyncio.gather(*(post(session, samples[j]) for j in group))
            for j, answer in zip(group, answers, strict=True):
                out[j] = answer
    return out


def alone(post: Post, samples: Sequence[Any]) -> list[Any]:
    return asyncio.run(_alone(post, samples))


def mixed(post: Post, samples: Sequence[Any], seed: int, max_group: int = 32) -> list[Any]:
    return asyncio.run(_mixed(post, samples, seed, max_group))


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _numbers(v)]
    return []


def compare(reference: Sequence[Any], runs: Sequence[Sequence[Any]]) -> tuple[int, int, float]:
    """(compared, differ, max |diff|) over every run against `reference`; equality is exact (JSON-equal)."""
    compared = differ = 0
    worst = 0.0
    for run in runs:
        for ref, got in zip(reference, run, strict=True):
            compared += 1
            if json.dumps(ref) != json.dumps(got):
                differ += 1
                a, b = _numbers(ref), _numbers(got)
                if len(a) == len(b):
                    worst = max([worst, *(abs(x - y) for x, y in zip(a, b, strict=True))])
                else:
                    worst = float("inf")
    return compared, differ, worst


def batches_over_one(url: str, operation: str) -> int:
    """Batches of more than one request the server ran for `operation`, from its histogram."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    prefix = "rewardfleet_model_server_batch_size_"
    total = le_one = 0.0
    for line in text.splitlines():
        if not line.startswith(prefix) or f'operation="{operation}"' not in line:
            continue
        if line.startswith(prefix + "count"):
            total = float(line.split()[-1])
        elif line.startswith(prefix + "bucket") and 'le="1.0"' in line:
            le_one = float(line.split()[-1])
    return int(total - le_one)
