"""Scores /app/report.json key by key against /app/sales.csv as the image shipped it (a copy in /tests)."""

import csv
import json
import sys
from collections import defaultdict

with open("/tests/sales.csv", newline="") as f:
    rows = list(csv.DictReader(f))
by_region: defaultdict[str, int] = defaultdict(int)
by_customer: defaultdict[str, int] = defaultdict(int)
for row in rows:
    by_region[row["region"]] += int(row["amount_cents"])
    by_customer[row["customer"]] += int(row["amount_cents"])
best = max(by_customer.values())
expected = {
    "total_cents": sum(by_region.values()),
    "by_region": dict(by_region),
    "top_customer": min(name for name, total in by_customer.items() if total == best),
}

try:
    with open("/app/report.json") as f:
        report = json.load(f)
except (OSError, ValueError) as exc:
    print(f"report.json unreadable: {exc}", file=sys.stderr)
    report = None
ok = isinstance(report, dict) and set(report) == set(expected)
scores = {}
for key, value in expected.items():
    got = report.get(key) if isinstance(report, dict) else None
    same = type(got) is type(value) and got == value
    if isinstance(value, dict) and isinstance(got, dict):
        same = got == value and all(type(v) is int for v in got.values())
    scores[key] = 1.0 if same else 0.0
scores["exact_keys"] = 1.0 if ok else 0.0
scores["reward"] = round(sum(scores[k] for k in expected) / len(expected), 4) if ok else 0.0
json.dump(scores, sys.stdout)
