"""JSON for `rewardfleet score`'s own files: orjson when installed, else the standard library.

JSON for `rewardfleet score`'s own files (INPUT lines, OUTPUT lines): orjson when it is installed (the
`rescore` extra; 2-4x faster to parse and encode one line), the standard library otherwise.

Both write the same bytes for what an OUTPUT line holds (compact separators, UTF-8 as it is), so a run
resumed with the other codec stays readable; only float exponents and non-finite numbers are written
differently (orjson: `1e-7`, `null` for NaN; the standard library: `1e-07`, `NaN`). What orjson refuses to
parse or write (NaN or Infinity in an input line, integers beyond 64 bits) goes to the standard library, so
no line reads or writes differently than it would without orjson.

Only this command uses it; the gateway and the client keep their own JSON.
"""

from __future__ import annotations

import json
from typing import Any

_STDLIB_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

try:
    import orjson
except ImportError:  # pragma: no cover - exercised only where the extra is not installed
    orjson = None  # type: ignore[assignment]

CODEC = "orjson" if orjson is not None else "json"


def _stdlib_line(value: Any) -> bytes:
    return (_STDLIB_ENCODER.encode(value) + "\n").encode("utf-8")


if orjson is not None:
    _orjson_loads = orjson.loads
    _orjson_dumps = orjson.dumps
    _APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE
    _DecodeError = orjson.JSONDecodeError
    _EncodeError = orjson.JSONEncodeError

    def loads(data: bytes | str) -> Any:
        try:
            return _orjson_loads(data)
        except _DecodeError:
            return json.loads(data)  # NaN / Infinity literals, which Python's json writes; else its error

    def dump_line(value: Any) -> bytes:
        """`value` as one JSON line (newline included)."""
        try:
            return _orjson_dumps(value, option=_APPEND_NEWLINE)
        except _EncodeError:
            return _stdlib_line(value)  # integers beyond 64 bits and other values orjson refuses

else:  # pragma: no cover

    def loads(data: bytes | str) -> Any:
        return json.loads(data)

    def dump_line(value: Any) -> bytes:
        """`value` as one JSON line (newline included)."""
        return _stdlib_line(value)


__all__ = ["CODEC", "dump_line", "loads"]
