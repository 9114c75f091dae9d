"""The checker registry and its typed kwargs: each instruction id names a check and the kwargs it takes.

Kwargs come with the task. A missing required kwarg, one of the wrong type, an unknown key or an unknown
relation is an `InstructionKwargsError` naming `kwargs[i].<field>`, never a silent False: IFEval's own
classes would draw a random value for a missing kwarg, which makes the reward a coin toss. `None` values are
dropped first (NeMo Gym's IFBench rows list every key of the dataset, most of them null).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

RELATIONS = ("less than", "at least")


class InstructionError(ValueError):
    """Base: the task's instructions cannot be checked (the sample gets a typed error, not a score)."""


class UnknownInstruction(InstructionError):
    """An instruction id this build does not check (docs/verifiable_tasks.md lists the supported ones)."""


class InstructionKwargsError(InstructionError):
    """An instruction's kwargs are missing, of the wrong type or unknown."""


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    # Datasets stored as parquet turn ints into floats (IFBench rows carry N=39.0).
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    # Negative counts: the reference classes draw a random value instead.
    return value if isinstance(value, int) and value >= 0 else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _strs(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _relation(value: Any) -> str | None:
    return value if value in RELATIONS else None


TYPES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "int": (_int, "a non-negative integer"),
    "number": (_number, "a finite number"),
    "str": (_str, "a string"),
    "strs": (_strs, "a list of strings"),
    "relation": (_relation, f"one of {list(RELATIONS)}"),
}


@dataclass(frozen=True)
class Checker:
    """One instruction type: `check(response, kwargs, prompt)` on validated kwargs."""

    check: Callable[[str, Mapping[str, Any], str], bool]
    required: Mapping[str, str]
    optional: Mapping[str, str]
    lenient: bool = False  # takes and ignores any other kwargs (IFBench's `custom:*` accept **kwargs)

    def kwargs(self, raw: Any, where: str) -> dict[str, Any]:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise InstructionKwargsError(f"{where} must be an object, got {type(raw).__name__}")
        given = {k: v for k, v in raw.items() if v is not None}
        out: dict[str, Any] = {}
        for name, value in given.items():
            kind = self.required.get(name) or self.optional.get(name)
            if kind is None and self.lenient:
                continue
            if kind is None:
                known = sorted({*self.required, *self.optional})
                raise InstructionKwargsError(
                    f"{where}.{str(name)[:64]} is not a kwarg of this instruction {known}"
                )
            parse, described = TYPES[kind]
            parsed = parse(value)
            if parsed is None:
                raise InstructionKwargsError(
                    f"{where}.{name} must be {described}, got {type(value).__name__}"
                )
            out[name] = parsed
        missing = [name for name in self.required if name not in out]
        if missing:
            raise InstructionKwargsError(f"{where}.{missing[0]} is required")
        return out


REGISTRY: dict[str, Checker] = {}

# Instruction types we know but cannot check here, with the reason (a typed error, never a guess).
UNSUPPORTED = {
    "ratio:stop_words": "needs NLTK's English stopwords corpus, which no PyPI package ships "
    "(IFBench downloads it at run time)",
    "words:start_verb": "needs NLTK's averaged perceptron POS tagger data, which no PyPI package ships",
}


class UnsupportedInstruction(UnknownInstruction):
    """A known instruction type that needs data this build cannot load without a download."""


def checker(
    instruction_id: str, lenient: bool = False, **params: str
) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Registers a check. `params`: name -> type ("int", "number", "str", "strs", "relation"); a type
    written with a trailing "?" is optional."""

    def register(fn: Callable[..., bool]) -> Callable[..., bool]:
        if instruction_id in REGISTRY:
            raise RuntimeError(f"instruction {instruction_id} registered twice")
        required = {k: v for k, v in params.items() if not v.endswith("?")}
        optional = {k: v[:-1] for k, v in params.items() if v.endswith("?")}
        REGISTRY[instruction_id] = Checker(fn, required, optional, lenient)
        return fn

    return register
