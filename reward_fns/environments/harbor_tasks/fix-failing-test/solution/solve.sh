#!/bin/bash
set -euo pipefail
cd /app
python3 - <<'PY'
from pathlib import Path

path = Path("stats.py")
text = path.read_text()
text = text.replace(
    "    middle = len(ordered) // 2\n    return ordered[middle]\n",
    "    middle = len(ordered) // 2\n"
    "    if len(ordered) % 2:\n"
    "        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n",
)
text = text.replace(
    "    return max(counts, key=lambda value: counts[value])\n",
    "    best = max(counts.values())\n    return min(value for value, count in counts.items() if count == best)\n",
)
path.write_text(text)
PY
python3 -m pytest -q test_stats.py
