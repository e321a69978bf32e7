#!/usr/bin/env bash
# `make debate [INJECTIONS=20]`: the Redlock debate, claim by claim, on
# measured curves. Build the release binaries, make sure PostgreSQL
# answers, then `seckill-loadgen debate`: every claim's sweep across the
# boundary it names (INJECTIONS at every point), written to
# docs/redlock-debate.md and docs/redlock-debate.json; each sweep's report
# under ${OUT:-loadgen-report/debate}/<run>/. Exit: the debate's (0 every
# row agrees, 1 one contradicts, 4 one undecided, 3 a run failed).
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
  --report-dir "${OUT:-loadgen-report/debate}" \
  --out "${DEBATE_OUT:-docs/redlock-debate.md}" \
  --json "${DEBATE_JSON:-docs/redlock-debate.json}"
