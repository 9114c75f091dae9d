"""StructEval structured outputs (JSON, YAML, TOML, XML, CSV), as NeMo Gym's `structeval` server grades them.

The code is the first fenced block of the response (```` ```<anything>\\n ... ``` ````, or to the end),
else the text after `<|BEGIN_CODE|>` (to `<|END_CODE|>` or the end), else the whole response; before
that the response's `&lt;` / `&gt;` are unescaped, an empty `<think>` block dropped and backslash escapes
decoded (Python's `unicode_escape`, skipped when it fails). It is parsed as `extra_info["output_type"]`
(json; yaml with `yaml.safe_load`; toml with the `toml` package; xml with `xmltodict`; csv as
`{"csv_headers", "csv_rows"}`): `render_score` 1 when that gives a non-empty value. Then each key path of
`ground_truth` (NeMo Gym's `raw_output_metric`: dot-separated keys, backticks quoting dots, `[i]` list
indices, `*` any list item, `@name` an XML attribute, `csv::<header>` a CSV column) is looked up:
`key_validation_score` is the fraction found. The score is `round(0.2 * render + 0.8 * keys, 2)`.

Returns `{"score", "render_score", "key_validation_score", "raw_output_score" (the fraction of paths that
appear verbatim in the response, case ignored), "error_type", "error_message"}`; an empty response is
`error_type` `empty_response`, an unparsable one `parse_error`. An output type other than the five, or a key
path with an unclosed `[`, is a `TaskFieldError` (NeMo Gym scores the first 0 and fails on the second).
TOML and XML need the `toml` and `xmltodict` packages (the `nemo-gym-catalog` extra).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

import yaml

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "extract_code", "path_exists"]

_BEGIN = r"<\|BEGIN_CODE\|>[ \t]*\n?(?P<begin>.*?)(?:<\|END_CODE\|>|$)"
MAX_PATHS = 1_000
MAX_PATH_CHARS = 1_000


def _fence(output_type: str) -> re.Pattern[str]:
    return re.compile(rf"```(?:{re.escape(output_type)}|[^\n]*)[ \t]*\n(?P<fenced>.*?)(?:```|$)", re.S | re.I)


def extract_code(text: str, output_type: str) -> str:
    """The code the response gives for `output_type` (lower case)."""
    try:
        text = text.replace("&lt;", "<").replace("&gt;", ">")
        text = text.replace("<think>\n\n</think>\n\n", "")
        text = codecs.decode(text, "unicode_escape")
    except ValueError:  # a broken escape: the text as unescaped so far
        pass
    if (fenced := _fence(output_type).search(text)) is not None:
        return fenced.group("fenced").strip()
    if (begun := re.search(_BEGIN, text, re.S | re.I)) is not None:
        return begun.group("begin").strip()
    return text.strip()


def _csv(code: str) -> dict[str, Any]:
    reader = csv.DictReader(io.StringIO(code))
    return {"csv_headers": reader.fieldnames, "csv_rows": list(reader)}


def _toml(code: str) -> Any:
    import toml  # the nemo-gym-catalog extra

    return toml.loads(code)


def _xml(code: str) -> Any:
    import xmltodict  # the nemo-gym-catalog extra

    return xmltodict.parse(code)


_PARSERS: dict[str, Callable[[str], Any]] = {
    "json": json.loads,
    "yaml": yaml.safe_load,
    "toml": _toml,
    "xml": _xml,
    "csv": _csv,
}


def _tokens(path: str) -> list[str]:
    """A key path's steps; ValueError for an unclosed `[`."""
    if path.startswith("csv::"):
        return [path]
    tokens: list[str] = []
    word, quoted, i = "", False, 0
    while i < len(path):
        ch = path[i]
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            tokens += [word] if word else []
            word = ""
        elif ch == "[" and not quoted:
            tokens += [word] if word else []
            word = ""
            close = path.find("]", i)
            if close < 0:
                raise ValueError(f"unclosed '[' in key path {path[:80]!r}")
            tokens.append(path[i : close + 1])
            i = close
        else:
            word += ch
        i += 1
    return tokens + ([word] if word else [])


def _found(node: Any, steps: list[str]) -> bool:
    if not steps:
        return True
    step, rest = steps[0], steps[1:]
    if isinstance(node, dict) and "csv_headers" in node and step.startswith("csv::"):
        return step[5:] in (node["csv_headers"] or []) and not rest
    if step == "*":
        return isinstance(node, list) and any(_found(item, rest) for item in node)
    if step.startswith("[") and step.endswith("]"):
        try:
            index = int(step[1:-1])
        except ValueError:
            return False
        return isinstance(node, list) and 0 <= index < len(node) and _found(node[index], rest)
    if isinstance(node, dict):
        if step in node:
            return _found(node[step], rest)
        if step.startswith("@") and step[1:] in node:
            return _found(node[step[1:]], rest)
    return False


def path_exists(data: Any, path: str) -> bool:
    return _found(data, _tokens(path))


def _paths(ground_truth: Any) -> list[str]:
    ok = isinstance(ground_truth, list) and all(isinstance(p, str) for p in ground_truth)
    if not ok or len(ground_truth) > MAX_PATHS or any(len(p) > MAX_PATH_CHARS for p in ground_truth):
        raise TaskFieldError(
            f"ground_truth (raw_output_metric) must be a list of at most {MAX_PATHS} key paths of at most"
            f" {MAX_PATH_CHARS} characters"
        )
    for path in ground_truth:
        try:
            _tokens(path)
        except ValueError as exc:
            raise TaskFieldError(f"ground_truth (raw_output_metric): {exc}") from None
    return ground_truth


def _parse(code: str, output_type: str) -> tuple[Any, str | None, str | None]:
    """(value, error_type, error_message); value None when the code does not parse to a non-empty value."""
    try:
        value = _PARSERS[output_type](code)
    except ImportError:
        raise
    except Exception as exc:  # any parser failure is the response's parse error
        return None, "parse_error", f"{type(exc).__name__}: {str(exc)[:200]}"
    if not value:
        return None, "parse_error", "Parsed result is empty"
    return value, None, None


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    paths = _paths(ground_truth)
    output_type = (extra_info or {}).get("output_type")
    if not isinstance(output_type, str) or output_type.lower() not in _PARSERS:
        raise TaskFieldError(f"extra_info.output_type must be one of {', '.join(_PARSERS)} (any case)")
    zero = {"score": 0.0, "render_score": 0.0, "key_validation_score": 0.0, "raw_output_score": 0.0}
    if (over := too_long(text)) is not None:
        return {**zero, **over}
    if not text.strip():
        return {**zero, "error_type": "empty_response", "error_message": "No assistant response text"}
    lowered = text.lower()
    raw = sum(p.lower() in lowered for p in paths) / len(paths) if paths else 0.0
    value, error_type, error_message = _parse(extract_code(text, output_type.lower()), output_type.lower())
    render = 0.0 if error_type else 1.0
    keys = sum(path_exists(value, p) for p in paths) / len(paths) if render and paths else 0.0
    return {
        "score": round(0.2 * render + 0.8 * keys, 2),
        "render_score": render,
        "key_validation_score": keys,
        "raw_output_score": raw,
        "error_type": error_type,
        "error_message": error_message,
    }
