"""Named reward components (`reward_components: {name: float}`): the bounds every result's components obey.

Multi-objective trainers (verl's GDPO advantage, NeMo Gym's multi-reward servers) normalise each named
component on its own, so a name becomes a trainer column or metric: names are short and of a safe charset,
the count is bounded, and every value is a finite number. A function that returns anything else gets a typed
`InvalidReturn` for its sample, never a partial or silently cleaned set.

Pure, no web imports: worker processes check a function's return with it.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.services.gateway.errors import InvalidReturn

KEY = "reward_components"
MAX_COMPONENTS = 32
MAX_NAME_CHARS = 64
# Letters, digits and `_ . : / -`, starting with a letter, digit or `_`: safe as a metric name, a column name
# and a JSON key, never a path or markup.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,63}")


class ComponentError(ValueError):
    """A components mapping outside the bounds; the message names the offending name or value."""


def checked_components(value: Any) -> dict[str, float]:
    """`value` as `{name: float}` within the bounds, else `ComponentError`."""
    if not isinstance(value, Mapping):
        raise ComponentError(f"{KEY} must be a mapping of name to number, not {type(value).__name__}")
    if len(value) > MAX_COMPONENTS:
        raise ComponentError(f"{KEY} has {len(value)} components; at most {MAX_COMPONENTS}")
    out: dict[str, float] = {}
    for name, number in value.items():
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            shown = repr(name)[:80]
            raise ComponentError(
                f"{KEY} name {shown} is not 1-{MAX_NAME_CHARS} characters of letters, digits and _ . : / -"
            )
        if isinstance(number, bool) or not isinstance(number, numbers.Real):
            item = getattr(number, "item", None)
            number = item() if callable(item) and not isinstance(number, (str, bytes)) else number
            if isinstance(number, bool) or not isinstance(number, numbers.Real):
                raise ComponentError(f"{KEY}[{name!r}] is {type(number).__name__}, not a number")
        score = float(number)
        if not math.isfinite(score):
            raise ComponentError(f"{KEY}[{name!r}] is {score}, not a finite number")
        out[name] = score
    return out


def returned_components(value: Any) -> dict[str, float]:
    """A function's returned components, or `InvalidReturn` (the typed error its sample gets)."""
    try:
        return checked_components(value)
    except ComponentError as exc:
        raise InvalidReturn(f"ComponentError: {exc}") from None
