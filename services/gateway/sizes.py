"""The size of a JSON value, counted cheaply: what the input limits and the result-size limit measure.

The *size* is one per value (dict, list, string, number, bool, null) plus the characters of every string and
every key: close to the length of the value's JSON text, and counted without reading any string (`len` is O(1)
on a Python string). The walk visits each value once, so its cost grows with the number of values, never with
the length of the text they hold, and it stops as soon as a bound is passed. Standard library only: worker
processes use it.
"""

from __future__ import annotations

from typing import Any

_CONTAINERS = (dict, list, tuple)  # a tuple of types: isinstance is faster with it than with a union


def json_size(value: Any, max_depth: int, max_size: int) -> tuple[int, int]:
    """`(depth, size)` of a JSON value (a scalar is depth 0, `{}` depth 1; size as the module docstring says),
    counted no further than the first bound it passes: a returned depth over `max_depth` or size over
    `max_size` means "too deep" / "too large", not the exact figure."""
    if isinstance(value, str):
        return 0, len(value) + 1
    if not isinstance(value, _CONTAINERS):
        return 0, 1
    deepest, size = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    push, pop = stack.append, stack.pop
    while stack:
        node, depth = pop()
        size += 1
        if depth > deepest:
            deepest = depth
            if deepest > max_depth:
                return deepest, size
        if isinstance(node, dict):
            for key, child in node.items():
                size += len(key) if type(key) is str else 1
                if isinstance(child, str):
                    size += len(child) + 1
                elif isinstance(child, _CONTAINERS):
                    push((child, depth + 1))
                else:
                    size += 1
        else:
            for child in node:
                if isinstance(child, str):
                    size += len(child) + 1
                elif isinstance(child, _CONTAINERS):
                    push((child, depth + 1))
                else:
                    size += 1
        if size > max_size:
            return deepest, size
    return deepest, size
