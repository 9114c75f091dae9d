#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json
from collections import Counter

totals, customers = Counter(), Counter()
with open("/app/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["amount_cents"])
        customers[row["customer"]] += int(row["amount_cents"])
best = max(customers.values())
report = {
    "total_cents": sum(totals.values()),
    "by_region": dict(totals),
    "top_customer": sorted(c for c, t in customers.items() if t == best)[0],
}
with open("/app/report.json", "w") as f:
    json.dump(report, f, indent=2)
PY
cat /app/report.json
