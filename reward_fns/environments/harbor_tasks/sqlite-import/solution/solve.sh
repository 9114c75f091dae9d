#!/bin/bash
set -euo pipefail
rm -f /app/shop.db
sqlite3 /app/shop.db <<'SQL'
CREATE TABLE items (name TEXT PRIMARY KEY, qty INTEGER NOT NULL, price_cents INTEGER NOT NULL);
.mode csv
.import --skip 1 /app/items.csv items
CREATE VIEW low_stock AS SELECT name FROM items WHERE qty < 5;
SQL
sqlite3 /app/shop.db 'SELECT * FROM low_stock;'
