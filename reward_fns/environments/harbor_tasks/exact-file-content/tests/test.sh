#!/bin/bash
# Reward 1 when /app/motd.txt is a regular, world-readable file equal byte for byte to the expected one.
mkdir -p /logs/verifier
target=/app/motd.txt
if [ -f "$target" ] && [ ! -L "$target" ] && [ "$(stat -c %A "$target" | cut -c8)" = r ] &&
  cmp -s "$target" /tests/expected_motd.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
