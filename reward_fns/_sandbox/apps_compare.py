"""Pass/fail of one test case, by the rules of verl 0.9.1's prime_code runner (apps-style test cases).

Runs outside the sandbox, on what the harness reported, so the program never sees the expected outputs.

Every input and expected output must be a string (prime_code asserts it, so a list fails the case).
stdin/stdout cases pass when:
1. the printed text equals the expected text after stripping both ends (also with every line stripped);
2. or the printed lines equal `[expected]`, or the expected text's non-empty lines stripped (printed lines as
   they are, then with empty ones dropped);
3. or, with as many non-empty printed lines as expected lines and not all of both plain digit strings, every
   pair parses as float and is close (relative 1e-5, absolute 1e-8, as numpy's `allclose`).
Call-based cases (`fn_name`) pass when the returned value (a tuple read as a list) equals the expected JSON
value, or its first element when that is a non-empty list, or (a list of tuples read as lists) that first
element; a JSON object expected is compared with its keys read as integers when they all are.
"""

from __future__ import annotations

import json
import math
from typing import Any

_RTOL = 1e-5
_ATOL = 1e-8


def decode(value: Any) -> Any:
    """The inverse of the harness's tagged JSON: tuples, int/float/bool and dict keys as they were."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "i" in value:
            return int(value["i"])
        if "f" in value:
            return float(value["f"])
        if "t" in value:
            return tuple(decode(v) for v in value["t"])
        if "d" in value:
            return {decode(k): decode(v) for k, v in value["d"]}
        raise ValueError(f"unknown tagged value {value!r}")
    return value


def _close(a: float, b: float) -> bool:
    if a == b:
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= _ATOL + _RTOL * abs(b)


def _digits(value: str) -> bool:
    return value.isdigit()


def stdin_case_passes(printed: str, expected: Any) -> bool:
    if not isinstance(expected, str):  # prime_code asserts a string (for its report) before comparing
        return False
    lines = printed.splitlines()
    want = expected.strip()
    if "\n".join(lines).strip() == want or "\n".join(line.strip() for line in lines).strip() == want:
        return True
    if lines == [expected]:
        return True
    expected_lines = [line.strip() for line in expected.split("\n") if line]
    if lines == expected_lines:
        return True
    printed_lines = [line for line in lines if line]
    if printed_lines == expected_lines:
        return True
    if len(printed_lines) != len(expected_lines):
        return False
    if all(_digits(a) and _digits(b) for a, b in zip(printed_lines, expected_lines, strict=True)):
        return False
    try:
        printed_floats = [float(line) for line in printed_lines]
        expected_floats = [float(line) for line in expected_lines]
    except ValueError:
        return False
    return all(_close(a, b) for a, b in zip(printed_floats, expected_floats, strict=True))


def _int_keys(value: dict[Any, Any]) -> dict[int, Any] | None:
    try:
        return {int(k): v for k, v in value.items()}
    except (TypeError, ValueError):
        return None


def call_case_passes(returned: Any, expected_json: Any) -> bool:
    if not isinstance(expected_json, str):
        return False
    try:
        expected = json.loads(expected_json)
    except ValueError:
        return False
    if isinstance(expected, dict):
        converted = _int_keys(expected)
        if converted is not None:
            expected = [converted]
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        converted = _int_keys(expected[0])
        if converted is not None:
            expected = [converted]
    if isinstance(returned, tuple):
        returned = list(returned)
    if returned == expected:
        return True
    if isinstance(expected, list) and expected and returned == expected[0]:
        return True
    if (
        isinstance(returned, list)
        and returned
        and isinstance(returned[0], tuple)
        and isinstance(expected, list)
    ):
        try:
            return [list(x) for x in returned] == expected[0]
        except (TypeError, IndexError):
            return False
    return False


def case_passes(result: dict[str, Any], expected: Any, call_based: bool) -> bool:
    """One harness result (`verdict`, `output`) against the expected output of its case."""
    if result.get("verdict") != "ok":
        return False
    if call_based:
        return call_case_passes(decode(result.get("output")), expected)
    output = result.get("output")
    return isinstance(output, str) and stdin_case_passes(output, expected)
