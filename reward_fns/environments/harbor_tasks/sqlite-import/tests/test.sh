#!/bin/bash
# Reward 1 when /app/shop.db holds the items as integers and the low_stock view, queried with the sqlite3
# shell the image installs; else 0.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
db=/app/shop.db
[ -f "$db" ] && [ ! -L "$db" ] || { echo "no $db"; exit 0; }
q() { sqlite3 -readonly -batch -noheader -separator '|' "file:$db?immutable=1" "$1" 2>&1; }
rows=$(q "SELECT name, qty, price_cents, typeof(qty), typeof(price_cents) FROM items ORDER BY name;")
low=$(q "SELECT name FROM low_stock ORDER BY name;")
pk=$(q "SELECT pk FROM pragma_table_info('items') WHERE name = 'name';")
if [ "$rows" = "$(cat /tests/expected_rows.txt)" ] && [ "$low" = "$(cat /tests/expected_low.txt)" ] &&
  [ "$pk" = 1 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  printf 'rows:\n%s\nlow_stock:\n%s\npk: %s\n' "$rows" "$low" "$pk"
fi
