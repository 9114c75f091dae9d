"""Runs /app/top_paths.sh on the hidden logs and compares its output with the answer computed here."""

import subprocess
from collections import Counter
from pathlib import Path

import pytest

LOGS = [*sorted(Path("/tests").glob("hidden_*.log")), Path("/tests/no_200.log")]


def expected(text):
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        _, _, tail = line.partition('"')
        request, _, rest = tail.partition('"')
        parts = request.split(" ")
        if rest.split()[0] == "200" and len(parts) >= 2:
            counts[" ".join(parts[1:-1])] += 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0].encode()))
    return "".join(f"{count} {path}\n" for path, count in ranked[:3])


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_top_paths(log):
    text = log.read_text()
    proc = subprocess.run(["/app/top_paths.sh"], input=text, capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected(text)
