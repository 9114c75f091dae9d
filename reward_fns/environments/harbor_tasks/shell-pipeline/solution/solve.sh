#!/bin/bash
set -euo pipefail
cat > /app/top_paths.sh <<'SH'
#!/bin/bash
# The request is the quoted field; the status is the first word after it.
LC_ALL=C awk -F'"' '{ split($3, after, " "); n = split($2, req, " ");
  if (after[1] == "200" && n >= 3) { path = req[2]; for (i = 3; i < n; i++) path = path " " req[i]; print path } }' |
  LC_ALL=C sort | LC_ALL=C uniq -c | LC_ALL=C sort -k1,1nr -k2 | head -n 3 |
  sed -E 's/^ *([0-9]+) /\1 /'
SH
chmod +x /app/top_paths.sh
/app/top_paths.sh < /app/access.log
