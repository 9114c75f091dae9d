"""Read the lines to re-score: JSONL or parquet, in one of four shapes, each turned into `/score` samples.

- `samples`: each line is a `/score` body, read as it is (`reward_fn`, `uid` and group fields included).
- `verl-dump`: verl's `trainer.rollout_data_dir` files (`RayPPOTrainer._write_generations`, verl 0.9.1):
  `input` (prompt text), `output` (response), `gts` (ground truth), `score`, `step`, the reward-extra columns,
  `request_id` when the rollout had one. No `data_source` unless a reward-extra column carried it: give
  `--data-source` (or `--field data_source=...`).
- `verl-parquet`: a verl dataset (`data_source`, `prompt`, `reward_model.ground_truth`, `extra_info`) with a
  `responses` column, as verl's `main_generation_server` writes it (a list of n responses per row; each
  response is one item) — JSONL rows of the same shape too.
- anything else through `--field sample_field=json.path` (paths.py), which also overrides a detected shape.

Identity of an item: its 1-based line (JSONL) or row (parquet), plus the index in the row's list of responses
when there is one. Blank JSONL lines are skipped (they have no item). A line that cannot be read is kept as an
item with a `problem` naming the field, so the caller can refuse the file or write the line as failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rewardfleet.services.rescore.jsoncodec import loads
from rewardfleet.services.rescore.paths import MISSING, JsonPath

InputFormat = Literal["auto", "samples", "verl-dump", "verl-parquet", "fields"]

_BUILTIN: dict[str, dict[str, str]] = {
    "samples": {},  # read as they are
    "verl-dump": {
        "solution_str": "output",
        "ground_truth": "gts",
        "prompt": "input",
        "data_source": "data_source",
        "uid": "request_id",
    },
    "verl-parquet": {
        "solution_str": "responses",
        "ground_truth": "reward_model.ground_truth",
        "prompt": "prompt",
        "data_source": "data_source",
        "extra_info": "extra_info",
        "uid": "uid",
    },
    "fields": {},
}
# Fields a built-in shape maps but a line may lack (the others are required).
_OPTIONAL = frozenset({"ground_truth", "prompt", "extra_info", "uid", "data_source"})


class InputError(ValueError):
    """The input cannot be read at all (missing file, unknown shape, bad parquet)."""


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs several µs, once per line
class Item:
    """One sample to score: where it came from, and its `/score` body (None when `problem` is set)."""

    line: int
    response: int | None
    uid: str | None
    sample: dict[str, Any] | None
    problem: str | None = None

    @property
    def key(self) -> tuple[int, int | None]:
        return (self.line, self.response)


@dataclass(frozen=True)
class ReadOptions:
    format: InputFormat = "auto"
    fields: dict[str, JsonPath] | None = None
    data_source: str | None = None  # for lines without one (verl dumps)
    reward_fn: str | None = None  # every sample goes to this function (the new judge)


def read_items(path: Path, options: ReadOptions) -> tuple[str, list[Item]]:
    """Every item of `path` in input order, and the format it was read as."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    rows = _parquet_rows(path) if path.suffix == ".parquet" else _jsonl_lines(path)
    records = list(rows)
    fmt: str = options.format
    if fmt == "auto":
        fmt = _detect(path, records, options)
    mapping = {name: JsonPath.parse(p) for name, p in _BUILTIN[fmt].items()}
    mapping.update(options.fields or {})
    if fmt != "samples" and "solution_str" not in mapping:
        raise InputError(f"{path}: format {fmt} needs --field solution_str=PATH")
    items: list[Item] = []
    for line, record in records:
        items.extend(_items(path, fmt, line, record, mapping, options))
    return fmt, items


def _jsonl_lines(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                yield number, loads(raw)
            except ValueError as exc:
                yield number, _BadJson(str(exc))


def _parquet_rows(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from exc
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not parquet
        raise InputError(f"{path}: not a readable parquet file: {exc}") from exc
    # to_pylist gives plain lists and dicts (pandas would give numpy arrays for verl's list columns).
    yield from enumerate(table.to_pylist(), start=1)


class _BadJson:
    def __init__(self, message: str) -> None:
        self.message = message


def _detect(path: Path, records: list[tuple[int, Any]], options: ReadOptions) -> str:
    first = next(((n, r) for n, r in records if not isinstance(r, _BadJson)), None)
    if first is None:
        if records:
            line, bad = records[0]
            raise InputError(f"{path} line {line}: not valid JSON ({bad.message})")
        raise InputError(f"{path}: no lines to score")
    line, record = first
    if not isinstance(record, dict):
        raise InputError(f"{path} line {line}: expected a JSON object, got {type(record).__name__}")
    keys = set(record)
    if options.fields and "solution_str" in options.fields:
        return "fields"
    if keys & {"solution_str", "response"}:
        return "samples"
    if {"output", "gts"} <= keys:
        return "verl-dump"
    if "responses" in keys and ("reward_model" in keys or "data_source" in keys):
        return "verl-parquet"
    raise InputError(
        f"{path} line {line}: cannot tell the format from its keys {sorted(keys)[:12]}: expected `/score` "
        "samples (solution_str), a verl dump (output, gts) or a verl dataset row with responses "
        "(data_source, reward_model, responses); name the fields with --field solution_str=PATH (and "
        "data_source=, ground_truth=, ...)"
    )


def _items(
    path: Path, fmt: str, line: int, record: Any, mapping: dict[str, JsonPath], options: ReadOptions
) -> list[Item]:
    def bad(problem: str) -> list[Item]:
        return [Item(line, None, None, None, f"{path} line {line}: {problem}")]

    if isinstance(record, _BadJson):
        return bad(f"not valid JSON ({record.message})")
    if not isinstance(record, dict):
        return bad(f"expected a JSON object, got {type(record).__name__}")
    if fmt == "samples":
        sample = record  # parsed for this item alone: no copy needed
        for name, json_path in mapping.items():
            value = json_path.get(record)
            if value is not MISSING:
                sample[name] = value
        if "solution_str" not in sample and "response" in sample:
            sample["solution_str"] = sample.pop("response")
        if "ground_truth" not in sample and "label" in sample:
            sample["ground_truth"] = sample.pop("label")
    else:
        sample = {}
        for name, json_path in mapping.items():
            value = json_path.get(record)
            if value is MISSING:
                if name in _OPTIONAL and name not in (options.fields or {}):
                    continue
                return bad(f"missing `{json_path.text}` (the sample's {name}, format {fmt})")
            sample[name] = value
    if options.data_source is not None and sample.get("data_source") is None:
        sample["data_source"] = options.data_source
    if options.reward_fn is not None:
        sample["reward_fn"] = options.reward_fn
    if sample.get("solution_str") is None:
        return bad("missing `solution_str` (the response to score; alias `response`)")
    if sample.get("data_source") is None:
        where = mapping["data_source"].text if "data_source" in mapping else "data_source"
        return bad(f"missing `{where}` (the sample's data_source): give --data-source NAME or --field")
    if not isinstance(sample["data_source"], str):
        return bad(f"data_source must be a string, got {type(sample['data_source']).__name__}")
    uid = sample.get("uid")
    uid_text = None if uid is None else str(uid)
    responses = sample["solution_str"]
    if fmt != "samples" and isinstance(responses, list):
        out = []
        for index, response in enumerate(responses):
            if not isinstance(response, str):
                return bad(f"responses[{index}] must be a string, got {type(response).__name__}")
            out.append(Item(line, index, uid_text, {**sample, "solution_str": response}))
        return out
    if not isinstance(responses, str):
        return bad(f"solution_str must be a string, got {type(responses).__name__}")
    return [Item(line, None, uid_text, sample)]
