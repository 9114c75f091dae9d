#!/bin/bash
# Reward 1 when test_stats.py is unchanged and stats.py behaves on the hidden cases, else 0.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
cd /app || exit 0
if ! sha256sum --check --quiet /tests/test_stats.sha256; then
  echo "test_stats.py was changed"
  exit 0
fi
# -I: the interpreter ignores PYTHON* variables, the user's site and the working directory (no stray
# pytest.py or conftest from /app); the agent's module is only ever imported in a child process.
if python3 -I -m pytest -q -p no:cacheprovider --noconftest --rootdir /tests /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
fi
