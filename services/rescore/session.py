"""Where `rewardfleet score` sends its lines: a running gateway or one in this process.

A running gateway (`--url`), or the gateway of a fleet config served in this process (inprocess.py). Both are
reached through the same HTTP client."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rich.console import Console

from rewardfleet.services.client import AsyncRewardClient
from rewardfleet.services.rescore.report import progress_bar
from rewardfleet.services.rescore.runner import Entry, RunOptions, RunStats, score_entries


class GatewayNotReachable(RuntimeError):
    """Nothing answers at `--url` when the command starts (nothing is sent)."""


@dataclass(frozen=True)
class Target:
    """Where to score: a running gateway (`url`), or the gateway of a fleet config run in-process."""

    url: str | None = None
    config: Path | None = None
    api_key: str | None = None


async def run_score(
    target: Target,
    entries: list[Entry],
    out: BinaryIO,
    options: RunOptions,
    console: Console | None = None,
    show_progress: bool = False,
) -> RunStats:
    """Score `entries` against `target`, writing every line to `out` in order (what the command runs)."""
    console = console or Console(stderr=True)
    gc.freeze()  # what is alive now (the input, read in full) stays out of the collector's walks
    try:
        with fewer_collections():
            return await _run_on(target, entries, out, options, console, show_progress)
    finally:
        gc.unfreeze()


# CPython's cyclic GC runs a young collection every 700 new containers, and its older collections walk every
# object still alive: here the whole input (an item, a sample dict and its values per line) and a line record
# per result. Measured on 20,000 lines: 20-40 µs per sample in collections for the command, 5 for a bare
# client; 5-10 with these settings.
_YOUNG_COLLECTION_EVERY = 10_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Young collections every 10,000 new containers instead of 700 while reading and scoring (the command
    wraps both; run_score also freezes what is alive when it starts). Collections still run, so reference
    cycles (aiohttp makes some) are freed; the setting is restored after."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], _YOUNG_COLLECTION_EVERY), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


async def _run_on(
    target: Target,
    entries: list[Entry],
    out: BinaryIO,
    options: RunOptions,
    console: Console,
    show_progress: bool,
) -> RunStats:
    if target.url is not None:
        return await _run(target.url, target.api_key, entries, out, options, console, show_progress)
    from rewardfleet.services.rescore.inprocess import inprocess_gateway, pool_names

    pools = pool_names(target.config)
    if pools:
        console.print(
            f"[yellow]in-process gateway: the config's pools {pools} are not started; functions that call "
            "them fail per sample. Run `rewardfleet up` and pass --url for those.[/yellow]"
        )
    async with inprocess_gateway(target.config) as (url, server):
        scoring = asyncio.create_task(_run(url, None, entries, out, options, console, show_progress))
        await asyncio.wait({scoring, server}, return_when=asyncio.FIRST_COMPLETED)
        if not scoring.done():  # the server stopped first (a signal): stop sending, keep what is written
            scoring.cancel()
            raise KeyboardInterrupt
        return scoring.result()


async def _run(
    url: str,
    api_key: str | None,
    entries: list[Entry],
    out: BinaryIO,
    options: RunOptions,
    console: Console,
    show_progress: bool,
) -> RunStats:
    async with AsyncRewardClient(
        url, max_concurrency=options.concurrency, api_key=api_key, timeout_s=options.timeout_s or 120.0
    ) as client:
        if not await client.health():
            raise GatewayNotReachable(f"no gateway answers GET {client.base_url}/health")
        if not show_progress:
            return await score_entries(client, entries, out, options)
        total = sum(1 for e in entries if e.sample_to_send() is not None) * options.repeat
        with progress_bar(console) as bar:
            task = bar.add_task("scoring", total=total, failed=0)
            failed = 0

            def advance(done: int, new_failures: int) -> None:
                nonlocal failed
                failed += new_failures
                bar.update(task, advance=done, failed=failed)

            return await score_entries(client, entries, out, options, advance)
