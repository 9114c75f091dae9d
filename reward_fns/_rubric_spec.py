"""Rubrics for the `rubric` built-in: criteria read from hostile input, bounded, and the reward formula.

A rubric is a list of criteria `{text, weight, kind?, name?}`:

- `text`: what the response must do (or, for a pitfall, must not do), at most `max_criterion_chars`;
- `weight`: a finite number, 0 < |weight| <= `max_abs_weight`; negative marks a pitfall;
- `kind`: `essential`, `important` (the default) or `optional`;
- `name`: the criterion's key in `reward_components` (`[a-z0-9_]{1,32}`, unique), default `c<index>`.

Reward (`rubric_score`), with P the criteria of positive weight and N the pitfalls, and "met" meaning the
judge said yes (for a pitfall: the response commits it):

    raw = (sum of w over met P  -  sum of |w| over met N) / (sum of w over P)
    reward = clip(raw, 0, 1)

and with `essential_gate` (on by default) the reward is 0 when an essential positive criterion is not met or
an essential pitfall is met. A rubric with no positive criterion is refused (no reward could be earned).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

Kind = Literal["essential", "important", "optional"]
KINDS: tuple[str, ...] = ("essential", "important", "optional")
_NAME_RE = re.compile(r"[a-z0-9_]{1,32}")


class RubricInputError(ValueError):
    """A rubric (from the sample or a rubric set) is malformed or over a limit; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class RubricLimits:
    max_criteria: int = 32
    max_criterion_chars: int = 1_000
    max_abs_weight: float = 100.0


@dataclass(frozen=True)
class Criterion:
    name: str
    text: str
    weight: float
    kind: Kind = "important"

    @property
    def pitfall(self) -> bool:
        return self.weight < 0


def parse_rubric(raw: Any, field: str, limits: RubricLimits) -> list[Criterion]:
    """Criteria from `raw` (a list of mappings), checked against `limits`; raises `RubricInputError`."""
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        raise RubricInputError(field, f"must be a list of criteria, got {type(raw).__name__}")
    if not raw:
        raise RubricInputError(field, "is empty: at least one criterion is needed")
    if len(raw) > limits.max_criteria:
        raise RubricInputError(
            field, f"has {len(raw)} criteria, more than max_criteria={limits.max_criteria}"
        )
    out: list[Criterion] = []
    for i, item in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise RubricInputError(
                where, f"must be a mapping {{text, weight, kind?}}, got {type(item).__name__}"
            )
        unknown = set(item) - {"text", "weight", "kind", "name"}
        if unknown:
            raise RubricInputError(where, f"unknown key(s) {sorted(map(str, unknown))}")
        out.append(_criterion(item, i, where, limits))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise RubricInputError(field, "two criteria have the same name")
    if not any(c.weight > 0 for c in out):
        raise RubricInputError(field, "has no criterion of positive weight: no reward could be earned")
    return out


def _criterion(item: Mapping[str, Any], index: int, where: str, limits: RubricLimits) -> Criterion:
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RubricInputError(f"{where}.text", "must be a non-empty string")
    if len(text) > limits.max_criterion_chars:
        raise RubricInputError(
            f"{where}.text",
            f"is {len(text)} characters, more than max_criterion_chars={limits.max_criterion_chars}",
        )
    weight = item.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
        raise RubricInputError(f"{where}.weight", "must be a finite number")
    if weight == 0 or abs(weight) > limits.max_abs_weight:
        raise RubricInputError(
            f"{where}.weight", f"must be non-zero with |weight| <= {limits.max_abs_weight}"
        )
    kind = item.get("kind", "important")
    if kind not in KINDS:
        raise RubricInputError(f"{where}.kind", f"must be one of {list(KINDS)}")
    name = item.get("name", f"c{index}")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise RubricInputError(f"{where}.name", "must match [a-z0-9_]{1,32}")
    return Criterion(name=name, text=text, weight=float(weight), kind=kind)


def rubric_score(criteria: Sequence[Criterion], met: Sequence[bool], *, essential_gate: bool = True) -> float:
    """The normalised weighted sum of the module docstring."""
    positive = sum(c.weight for c in criteria if c.weight > 0)
    gained = sum(c.weight for c, m in zip(criteria, met, strict=True) if m and c.weight > 0)
    lost = sum(-c.weight for c, m in zip(criteria, met, strict=True) if m and c.weight < 0)
    if essential_gate:
        for c, m in zip(criteria, met, strict=True):
            if c.kind == "essential" and (m if c.pitfall else not m):
                return 0.0
    return min(1.0, max(0.0, (gained - lost) / positive))


def load_rubric_set(path: str | Path, limits: RubricLimits) -> dict[str, list[Criterion]]:
    """A rubric set: a YAML or JSON file mapping rubric names to lists of criteria."""
    text = Path(path).read_text()
    data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    if not isinstance(data, Mapping) or not data:
        raise RubricInputError("rubric_set", f"{path} must map rubric names to lists of criteria")
    return {str(name): parse_rubric(raw, f"rubric_set[{name}]", limits) for name, raw in data.items()}


def reference_rubric(reference: str) -> list[Criterion]:
    """The rubric of a sample that carries none but has a reference answer (and of judge probes)."""
    text = f"The response's final answer is {json.dumps(reference, ensure_ascii=False)} or equivalent to it."
    return [Criterion(name="reference_answer", text=text, weight=1.0, kind="essential")]
