"""The OUTPUT file: one JSON line per input item, in input order, written as results arrive.

A line holds the item's identity (`line`, `response` for a row's n-th response, `uid` if the input had one),
`data_source`, `reward_fn`, `status`, `score`, `extra`, `error`, `reward_components` when the function or
composite gave them (the failed repeat's, else the first's) and, with `--repeat N`, every repeat's `scores`
and `statuses`. Nothing that varies from run to run (timings, cache hits, attempts) is written, so
an interrupted run finished with `--resume` is byte-identical to an uninterrupted one.

`read_output` reads an earlier OUTPUT back: the complete lines by item key, and where the last complete line
ends (a run killed in the middle of a write leaves a partial last line, which `--resume` cuts off).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardfleet.services.client import ScoreResult
from rewardfleet.services.rescore.inputs import Item
from rewardfleet.services.rescore.jsoncodec import dump_line, loads

Key = tuple[int, int | None]


class OutputError(ValueError):
    """An earlier OUTPUT that cannot be read back (a complete line that is not one of ours)."""


def identity(item: Item) -> dict[str, Any]:
    out: dict[str, Any] = {"line": item.line}
    if item.response is not None:
        out["response"] = item.response
    if item.uid is not None:
        out["uid"] = item.uid
    return out


def result_line(item: Item, results: Sequence[ScoreResult]) -> dict[str, Any]:
    """The output record of an item scored once (one result) or `--repeat` times (one result each)."""
    first = results[0]
    if len(results) == 1:  # the common case, once per line: no generator
        failed = None if first.ok else first
    else:
        failed = next((r for r in results if not r.ok), None)
    sample = item.sample or {}
    line = identity(item)
    line["data_source"] = first.data_source or sample.get("data_source")
    line["reward_fn"] = first.reward_fn or sample.get("reward_fn")
    line["status"] = failed.status if failed is not None else "ok"
    if len(results) == 1:
        line["score"] = first.score
        if first.fallback_score:
            line["fallback_score"] = True  # the function's configured on_error_score, not a real score
    else:
        import statistics  # --repeat only: not imported on every run (it brings fractions and decimal)

        line["score"] = (
            statistics.fmean(r.score for r in results if r.score is not None) if not failed else None
        )
        line["scores"] = [r.score for r in results]
        line["statuses"] = [r.status for r in results]
    line["extra"] = (failed or first).extra
    components = (failed or first).reward_components
    if components is not None:
        line["reward_components"] = components
    error = (failed or first).error
    line["error"] = None if error is None else {"type": error.type, "message": error.message}
    return line


def bad_input_line(item: Item) -> dict[str, Any]:
    """An item whose input line could not be read (`--skip-bad-lines`): failed, never sent."""
    line = identity(item)
    line.update(data_source=None, reward_fn=None, status="error", score=None, extra={})
    line["error"] = {"type": "bad_input", "message": item.problem or "unreadable line"}
    return line


def encode(line: dict[str, Any]) -> bytes:
    """One OUTPUT line, newline included (jsoncodec.py: the same bytes with or without orjson)."""
    return dump_line(line)


def item_key(line: dict[str, Any]) -> Key:
    response = line.get("response")
    return (int(line["line"]), None if response is None else int(response))


@dataclass
class EarlierOutput:
    lines: dict[Key, bytes]  # raw bytes of each complete line, newline included
    records: dict[Key, dict[str, Any]]
    complete_bytes: int  # where the last complete line ends
    size_bytes: int

    def failed(self) -> set[Key]:
        return {key for key, rec in self.records.items() if rec.get("status") != "ok"}


def read_output(path: Path) -> EarlierOutput:
    data = path.read_bytes() if path.exists() else b""
    end = data.rfind(b"\n") + 1  # 0 when there is no complete line
    lines: dict[Key, bytes] = {}
    records: dict[Key, dict[str, Any]] = {}
    for number, raw in enumerate(data[:end].splitlines(keepends=True), start=1):
        try:
            record = loads(raw)
            key = item_key(record)
        except (ValueError, KeyError, TypeError) as exc:
            raise OutputError(f"{path} line {number} is not a `rewardfleet score` line: {exc}") from exc
        if key in lines:
            raise OutputError(f"{path} line {number}: item {key} appears twice")
        lines[key] = raw
        records[key] = record
    return EarlierOutput(lines, records, end, len(data))


def read_scores(path: Path) -> dict[Key, dict[str, Any]]:
    """The scores of an earlier run for `--compare`: an OUTPUT of this command, or any JSONL with a numeric
    `score` per line, such as a verl dump (its line number is then the identity, and a line with a number is
    taken as scored ok)."""
    records: dict[Key, dict[str, Any]] = {}
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                record = loads(raw)
                if not isinstance(record, dict):
                    raise TypeError(f"expected a JSON object, got {type(record).__name__}")
                key = item_key(record) if "line" in record else (number, None)
            except (ValueError, KeyError, TypeError) as exc:
                raise OutputError(f"{path} line {number}: cannot read a score from it: {exc}") from exc
            if "status" not in record:
                numeric = isinstance(record.get("score"), int | float) and not isinstance(
                    record["score"], bool
                )
                record = {**record, "status": "ok" if numeric else "error"}
            records[key] = record
    return records
