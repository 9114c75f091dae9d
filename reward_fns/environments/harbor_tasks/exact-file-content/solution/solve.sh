#!/bin/bash
set -euo pipefail
printf 'Welcome to the build host.\nBuilds start at 02:00 UTC; queue jobs before 01:45.\nQuestions: #build-infra (tabs\tand "quotes" are literal).\n' > /app/motd.txt
chmod 644 /app/motd.txt
