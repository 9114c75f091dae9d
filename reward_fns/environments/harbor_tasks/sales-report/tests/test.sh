#!/bin/bash
# reward.json: one score per key of the report, `exact_keys`, and `reward` (their mean; 0 without exactly
# the three keys).
mkdir -p /logs/verifier
python3 -I /tests/score_report.py > /logs/verifier/reward.json.partial &&
  mv /logs/verifier/reward.json.partial /logs/verifier/reward.json
