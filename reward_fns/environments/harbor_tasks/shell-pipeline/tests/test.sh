#!/bin/bash
# Reward 1 when /app/top_paths.sh answers every hidden log as the reference does, else 0.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
if [ -x /app/top_paths.sh ] &&
  python3 -I -m pytest -q -p no:cacheprovider --noconftest --rootdir /tests /tests/test_top_paths.py; then
  echo 1 > /logs/verifier/reward.txt
fi
