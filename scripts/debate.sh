#!/usr/bin/env bash
# `make debate [INJECTIONS=20]`: the Redlock debate, claim by claim, judged
# against its sources. Build the release binaries, make sure PostgreSQL
# answers, then `seckill-loadgen debate --write-docs`: every claim's sweep,
# a bisection of every flip (INJECTIONS at every point and probe), each
# row judged as its source states it and against our model; everything
# under ${OUT:-loadgen-report/debate}/ and the pages, curves and
# counterexamples in docs/ (redlock-debate.{md,json}, zh/redlock-debate.md,
# redlock-debate/). `make debate ROWS=id,id` measures only those rows and
# keeps every other row of the page as measured before. Exit 3 when a run
# failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
ensure_postgres
release_build seckill-app seckill-loadgen
exec target/release/seckill-loadgen debate \
  --injections "${INJECTIONS:-20}" \
  --app-bin target/release/seckill-app \
  --database-url "$PG_ADMIN_URL" \
  --out "${OUT:-loadgen-report/debate}" \
  ${ROWS:+--rows "$ROWS"} \
  --write-docs
