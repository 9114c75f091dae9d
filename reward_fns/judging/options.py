"""Per-sample options: a reward function's keyword options may be overridden by `extra_info`.

Precedence is `extra_info[name]` (one sample) > the keyword argument (config `reward_kwargs`) >
the function's default. Only the option names a function documents are read from `extra_info`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

T = TypeVar("T")


def sample_option(
    name: str, value: T, extra_info: Mapping[str, Any] | None, kind: type | tuple[type, ...]
) -> T:
    """`extra_info[name]` when present (type-checked against `kind`), else `value`."""
    if extra_info is None or name not in extra_info:
        return value
    override = extra_info[name]
    if not isinstance(override, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TypeError(f"extra_info[{name!r}] must be {expected}, got {type(override).__name__}")
    # A bool is an int in Python; do not let True stand in for a number option silently.
    if isinstance(override, bool) and kind in (int, float, (int, float)):
        raise TypeError(f"extra_info[{name!r}] must be a number, got bool")
    return cast(T, override)
