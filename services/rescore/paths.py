"""The `--field sample_field=json.path` mapping: where in an input record each sample field is.

A path is dot-separated keys with optional list indices: `reward_model.ground_truth`, `messages[-1].content`,
`responses[0]`. A key holding a dot or a bracket cannot be named (none of the formats read here has one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The sample fields a mapping may fill: the gateway's `/score` body (services/gateway/schemas.py).
SAMPLE_FIELDS: tuple[str, ...] = (
    "data_source",
    "solution_str",
    "ground_truth",
    "extra_info",
    "prompt",
    "reward_fn",
    "uid",
    "group_id",
    "group_size",
    "group_index",
    "group_fn",
)
_STEP_RE = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")
_MISSING = object()


class PathSyntaxError(ValueError):
    """A `--field` argument that is not `sample_field=json.path`."""


@dataclass(frozen=True)
class JsonPath:
    text: str
    steps: tuple[str | int, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        steps: list[str | int] = []
        pos = 0
        for part in text.split("."):
            if not part:
                raise PathSyntaxError(f"json path {text!r}: empty key")
            end = 0
            for match in _STEP_RE.finditer(part):
                if match.start() != end:
                    break
                key, index = match.groups()
                steps.append(key if key is not None else int(index))
                end = match.end()
            if end != len(part) or (steps and isinstance(steps[pos], int)):
                raise PathSyntaxError(f"json path {text!r}: {part!r} is not `key` or `key[index]`")
            pos = len(steps)
        return cls(text, tuple(steps))

    def get(self, record: Any) -> Any:
        """The value at this path, or `MISSING` when a key or index is absent."""
        value = record
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    return _MISSING
                value = value[step]
            else:
                if not isinstance(value, dict) or step not in value:
                    return _MISSING
                value = value[step]
        return value


MISSING: Any = _MISSING


def parse_field_args(args: list[str]) -> dict[str, JsonPath]:
    """`["ground_truth=answer", ...]` -> `{"ground_truth": JsonPath("answer")}`; names the bad argument."""
    mapping: dict[str, JsonPath] = {}
    for arg in args:
        name, sep, path = arg.partition("=")
        name = name.strip()
        if not sep or not path.strip():
            raise PathSyntaxError(f"--field {arg!r}: write it as sample_field=json.path")
        if name not in SAMPLE_FIELDS:
            raise PathSyntaxError(
                f"--field {arg!r}: {name!r} is not a sample field ({', '.join(SAMPLE_FIELDS)})"
            )
        mapping[name] = JsonPath.parse(path.strip())
    return mapping
