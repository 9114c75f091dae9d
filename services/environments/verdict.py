"""`Verdict`: how an environment scores a finished episode."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """The reward of a session, its named parts, and extras passed back to the caller as they are.

    A verify that cannot decide raises; it never returns 0 for "failed". `reward` and every component must be
    finite numbers (a NaN reward is refused here, where the environment made it, not in a trainer's loss).
    """

    reward: float
    reward_components: dict[str, float] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reward", _finite("reward", self.reward))
        object.__setattr__(
            self,
            "reward_components",
            {str(k): _finite(f"reward_components.{k}", v) for k, v in self.reward_components.items()},
        )


def _finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Verdict.{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"Verdict.{name} must be finite, got {number}")
    return number
