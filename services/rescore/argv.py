"""`rewardfleet score`'s command line read without typer, when it is plain.

typer reads every option's value through a pydantic TypeAdapter, which costs a run's start-up more CPU than a
short re-scoring itself (docs/architecture.md, "Elsewhere on the path"). A command line made only of the
command's own options, each given a value typer reads to the same thing without any doubt, is read here into
the same `ScoreArgs`; anything else (`--help`, an unknown or misspelt option, a missing INPUT or `-o`, `--`, a
number written any other way than plain digits, a path typer would refuse) gives None, and typer parses the
whole line as before, so every help text and error message stays typer's (an unexpected crash prints Python's
traceback, not typer's). tests/rescore/test_argv.py checks that this table is the typer command's and that
both read the same values.

Read as click reads (typer's parser): options and INPUT in any order, `--name value` or `--name=value`, the
value taken whatever it starts with, the last of a repeated option winning (`--field` collects them all),
REWARDFLEET_API_KEY when `--api-key` is not given (an empty variable counts as unset).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardfleet.services.rescore.command import ScoreArgs

API_KEY_ENV = "REWARDFLEET_API_KEY"

# Plain values only: what Python and pydantic read alike (no sign, underscore, space or exponent).
_INT_RE = re.compile(r"[1-9][0-9]{0,17}")
_FLOAT_RE = re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?")


def _path(dir_okay: bool) -> Callable[[str], Path | None]:
    """typer's Path option: taken as it is when nothing is there; an existing path must be readable (and
    not a directory for `--config` and `--compare`), else typer names the problem."""

    def read(value: str) -> Path | None:
        if not value or "\0" in value or value == "-":
            return None
        try:
            found = os.stat(value)
        except OSError:
            return Path(value)
        if (not dir_okay and stat.S_ISDIR(found.st_mode)) or not os.access(value, os.R_OK):
            return None
        return Path(value)

    return read


def _int_at_least(low: int) -> Callable[[str], int | None]:
    def read(value: str) -> int | None:
        if _INT_RE.fullmatch(value) is None or int(value) < low:
            return None
        return int(value)

    return read


def _float_at_least(low: float | None) -> Callable[[str], float | None]:
    def read(value: str) -> float | None:
        if _FLOAT_RE.fullmatch(value) is None or (low is not None and float(value) < low):
            return None
        return float(value)

    return read


def _text(value: str) -> str:
    return value


# Option name -> (ScoreArgs field, reader of its value); the readers' limits are the typer options' `min`.
VALUE_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "-o": ("output", _path(dir_okay=True)),
    "--output": ("output", _path(dir_okay=True)),
    "--url": ("url", _text),
    "--config": ("config", _path(dir_okay=False)),
    "--format": ("input_format", _text),
    "--field": ("field", _text),
    "--data-source": ("data_source", _text),
    "--reward-fn": ("reward_fn", _text),
    "--repeat": ("repeat", _int_at_least(1)),
    "--compare": ("compare_with", _path(dir_okay=False)),
    "--pass-threshold": ("pass_threshold", _float_at_least(None)),
    "--plot": ("plot_path", _path(dir_okay=True)),
    "--concurrency": ("concurrency", _int_at_least(1)),
    "--batch-size": ("batch_size", _int_at_least(1)),
    "--timeout-s": ("timeout_s", _float_at_least(0.001)),
    "--api-key": ("api_key", _text),
    "--summary-json": ("summary_json", _path(dir_okay=True)),
}
# Flag -> (ScoreArgs field, the value it sets).
FLAGS: dict[str, tuple[str, bool]] = {
    "--resume": ("resume", True),
    "--only-failed": ("only_failed", True),
    "--skip-bad-lines": ("skip_bad_lines", True),
    "--progress": ("progress", True),
    "--no-progress": ("progress", False),
}
MULTIPLE = frozenset({"field"})
_INPUT = _path(dir_okay=True)


def read_plain_command_line(argv: Sequence[str], environ: Mapping[str, str]) -> ScoreArgs | None:
    """The arguments after `score` as ScoreArgs, or None when typer should read them."""
    values: dict[str, Any] = {"field": []}
    inputs: list[str] = []
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token[:1] != "-" or token == "-":
            inputs.append(token)
            continue
        name, equals, attached = token.partition("=")
        if name in FLAGS and not equals:
            key, flag = FLAGS[name]
            values[key] = flag
            continue
        if name not in VALUE_OPTIONS or (equals and not name.startswith("--")):
            return None  # --help, `--`, an unknown option, `-o=x` (click reads "=x"), a flag given a value
        if equals:
            raw = attached
        elif i < len(tokens):
            raw = tokens[i]
            i += 1
        else:
            return None  # the option's value is missing
        key, read = VALUE_OPTIONS[name]
        value = read(raw)
        if value is None:
            return None
        if key in MULTIPLE:
            values[key].append(value)
        else:
            values[key] = value
    if len(inputs) != 1 or "output" not in values:
        return None
    input_path = _INPUT(inputs[0])
    if input_path is None:
        return None
    if "api_key" not in values and environ.get(API_KEY_ENV):
        values["api_key"] = environ[API_KEY_ENV]
    return ScoreArgs(input_path=input_path, **values)
