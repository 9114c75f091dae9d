"""Hidden cases for /app/stats.py, evaluated in a child interpreter so the module under test cannot touch the
test process."""

import json
import subprocess

import pytest

CASES = [
    ("mean", [1, 2, 3, 4], 2.5),
    ("mean", [5], 5),
    ("median", [3, 1, 2], 2),
    ("median", [4, 1, 3, 2], 2.5),
    ("median", [10, -2], 4),
    ("median", [1, 1, 2, 2, 3, 100], 2),
    ("mode", [3, 3, 1, 1, 2], 1),
    ("mode", [7, 5, 7], 7),
    ("mode", [9, 8, 8, 9, 0], 8),
]
EMPTY = ["mean", "median", "mode"]

PROGRAM = """
import json, sys
sys.path.insert(0, "/app")
import stats
out = []
for name, values in json.loads(sys.argv[1]):
    try:
        out.append(["ok", getattr(stats, name)(values)])
    except ValueError:
        out.append(["ValueError", None])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def results():
    calls = [[name, values] for name, values, _ in CASES] + [[name, []] for name in EMPTY]
    proc = subprocess.run(
        ["python3", "-I", "-c", PROGRAM, json.dumps(calls)], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("index", range(len(CASES)))
def test_case(results, index):
    name, values, expected = CASES[index]
    assert results[index] == ["ok", expected], f"{name}({values})"


@pytest.mark.parametrize("offset", range(len(EMPTY)))
def test_empty_raises(results, offset):
    assert results[len(CASES) + offset][0] == "ValueError", f"{EMPTY[offset]}([])"
