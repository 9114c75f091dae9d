"""Send the items to a gateway and write each output line as soon as it and every line before it are known.

Items go out in `/score/batch` requests of at most `batch_size` samples, at most `concurrency` requests in
flight; the client's one retry loop honours 429/503 and `Retry-After`, resending each sample with its uid.
Each item gets exactly one output line, in input order, whatever order the batches come back in:

- a batch the gateway refuses as a whole (422, 404, 413: one bad sample in it) is sent again sample by sample,
  so only the bad samples fail, each with the gateway's own error;
- a batch still unanswered when the retry budget runs out (`GatewayUnavailable`) fails each of its samples
  with that error; `--only-failed` sends them again later.

`--repeat N` sends every item N times, each repeat under its own uid (`<run nonce>:<line>:<response>:r<k>`),
so the gateway's result cache and in-flight dedupe (keyed by uid + inputs, `idempotency: uid`) cannot answer
one repeat with another: nothing about the cache changes for trainers. A gateway keyed on inputs only
(`idempotency: inputs`) would still answer repeats from its cache; those answers carry `cached: true` and are
counted, so the report can say the repeats were not independent.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

from rewardfleet.services.client import (
    AsyncRewardClient,
    GatewayHTTPError,
    GatewayUnavailable,
    RewardFleetError,
    ScoreResult,
)
from rewardfleet.services.rescore.inputs import Item
from rewardfleet.services.rescore.output import Key, encode, result_line

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    batch_size: int = 64
    concurrency: int = 8
    repeat: int = 1
    timeout_s: float | None = None  # per HTTP attempt; None: the client's


@dataclass(slots=True)
class Entry:
    """One output line to write: already known (`text` and its `record`: kept from an earlier OUTPUT, or a
    bad input line) or to be scored."""

    item: Item
    text: bytes | None = None
    record: dict[str, Any] | None = None

    def sample_to_send(self) -> dict[str, Any] | None:
        """The sample to score, or None when this line is already known or has no sample."""
        return self.item.sample if self.text is None else None


@dataclass
class RunStats:
    sent: int = 0  # samples sent (items × repeats)
    failed: int = 0  # samples whose result is not ok
    written: int = 0  # output lines written
    cached_repeats: int = 0  # repeats the gateway answered from its cache (not independent)
    # Per-sample figures stay out of the repr: asyncio.run() formats its result's repr when it restores the
    # SIGINT handler (Runner.run -> signal.getsignal -> a ValueError message holding the finished task), which
    # for 10,000 lines took 0.2 s, once per run.
    total_s_by_fn: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list), repr=False)
    # every line written, as written (the summary's input: OUTPUT is not read back)
    records: dict[Key, dict[str, Any]] = field(default_factory=dict, repr=False)


ProgressCallback = Callable[[int, int], None]  # (samples done now, of which failed)
_WRITTEN: list[ScoreResult | None] = []  # the results slot of a line written (shared, never filled)


# One sample to send: (index into the entries, repeat number, `/score` body). A tuple: one is built per sample
# and per repeat, and a tuple costs a fraction of a class instance's construction.
_Unit = tuple[int, int, dict[str, Any]]


def _bodies(entries: list[Entry], repeat: int) -> list[_Unit]:
    to_send = [
        (i, e.item, sample) for i, e in enumerate(entries) if (sample := e.sample_to_send()) is not None
    ]
    if repeat == 1:  # the common case: each sample as it is (the client copies it before adding a uid)
        return [(index, 0, sample) for index, _, sample in to_send]
    nonce = uuid.uuid4().hex[:12]
    units: list[_Unit] = []
    for index, item, sample in to_send:
        for k in range(repeat):
            body = dict(sample)
            body["uid"] = f"{nonce}:{item.line}:{item.response or 0}:r{k}"
            if body.get("group_id") is not None:  # each repeat forms its own group
                body["group_id"] = f"{body['group_id']}#r{k}"
            units.append((index, k, body))
    return units


def _chunks(units: list[_Unit], size: int) -> list[list[_Unit]]:
    """Batches of at most `size`, except that a GRPO group listed contiguously is never split: its members
    wait for each other in the gateway, so two halves in different requests could each wait on the other."""
    if all(unit[2].get("group_id") is None for unit in units):  # no groups: plain slices
        return [units[i : i + size] for i in range(0, len(units), size)]
    chunks: list[list[_Unit]] = []
    current: list[_Unit] = []
    for unit in units:
        group = unit[2].get("group_id")
        if len(current) >= size and (group is None or current[-1][2].get("group_id") != group):
            chunks.append(current)
            current = []
        current.append(unit)
    if current:
        chunks.append(current)
    return chunks


async def _score_chunk(
    client: AsyncRewardClient, bodies: list[dict[str, Any]], timeout_s: float | None
) -> list[ScoreResult]:
    try:
        return await client.score_batch(bodies, timeout_s=timeout_s)
    except GatewayUnavailable as exc:
        logger.warning("%d samples not scored: %s", len(bodies), exc)
        return [ScoreResult.client_failure(str(b.get("uid") or ""), exc) for b in bodies]
    except GatewayHTTPError as exc:
        logger.info("batch refused (%s); sending its samples one by one", exc)

    async def one(body: dict[str, Any]) -> ScoreResult:
        try:
            return await client.score(body, timeout_s=timeout_s)
        except RewardFleetError as exc:
            return ScoreResult.client_failure(str(body.get("uid") or ""), exc)

    return list(await asyncio.gather(*(one(b) for b in bodies)))


async def score_entries(
    client: AsyncRewardClient,
    entries: list[Entry],
    out: BinaryIO,
    options: RunOptions,
    on_progress: ProgressCallback | None = None,
) -> RunStats:
    """Score every entry without a `text`, and write all entries' lines to `out` in order as they complete."""
    stats = RunStats()
    units = _bodies(entries, options.repeat)
    results: list[list[ScoreResult | None]] = [
        [None] * options.repeat if e.sample_to_send() is not None else [] for e in entries
    ]
    missing = [len(r) for r in results]
    next_to_write = 0

    records = stats.records

    count = len(entries)

    def flush() -> None:
        # Runs once per line: locals, and no typing.cast(list[...]) building an alias each time.
        nonlocal next_to_write
        texts: list[bytes] = []
        i = next_to_write
        while i < count and missing[i] == 0:
            entry = entries[i]
            item = entry.item
            text = entry.text
            if text is None:
                # nothing missing: every repeat's slot holds its result
                record = result_line(item, cast("list[ScoreResult]", results[i]))
                text = encode(record)
                records[item.key] = record
                results[i] = _WRITTEN  # let the results go
            elif entry.record is not None:
                records[item.key] = entry.record
            texts.append(text)
            i += 1
        next_to_write = i
        if texts:
            # Whole lines only, one write and one flush per answer (no fsync: a killed process loses nothing
            # the OS has; a crashed machine may lose the tail, which --resume sends again).
            out.write(b"".join(texts))
            out.flush()
            stats.written += len(texts)

    flush()  # lines known up front (kept or bad) before the first unscored one
    semaphore = asyncio.Semaphore(options.concurrency)

    repeat = options.repeat
    total_s_by_fn = stats.total_s_by_fn

    async def run(chunk: list[_Unit]) -> None:
        try:
            answers = await _score_chunk(client, [u[2] for u in chunk], options.timeout_s)
        finally:
            semaphore.release()
        failed = 0
        cached = 0
        for (index, k, _), result in zip(chunk, answers, strict=True):
            results[index][k] = result
            missing[index] -= 1
            if result.status != "ok":  # not result.ok: one property call less per sample
                failed += 1
            if result.cached:
                cached += 1
            fn = result.reward_fn
            if fn and "total_s" in result.timings:
                total_s_by_fn[fn].append(result.timings["total_s"])
        if repeat > 1:
            stats.cached_repeats += cached
        stats.sent += len(chunk)
        stats.failed += failed
        if on_progress is not None:
            on_progress(len(chunk), failed)
        flush()

    tasks: list[asyncio.Task[None]] = []
    try:
        for chunk in _chunks(units, options.batch_size):
            await semaphore.acquire()
            tasks.append(asyncio.create_task(run(chunk)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    flush()
    if next_to_write != count:  # every chunk answered, so every line must be out
        raise RuntimeError(f"internal error: wrote {next_to_write} of {len(entries)} lines")
    return stats
