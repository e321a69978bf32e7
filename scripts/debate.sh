#!/usr/bin/env bash
# `make debate [TRIALS=5]`: the Redlock debate, claim by claim. Build the
# release binaries, make sure PostgreSQL answers, run every scenario the
# claims need (`seckill-loadgen debate --scenarios`) for the three designs
# the debate is about — redlock, set-nx-px-token, fenced — each case
# TRIALS times in a fresh world, then write docs/redlock-debate.md from the
# report (`seckill-loadgen debate`). The scenario report stays in
# ${OUT:-loadgen-report/debate}. Exit: the debate's (0 every claim
# confirmed, 1 one contradicted, 4 one missing or inconclusive), or the
# scenario run's when it wrote no report.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
ensure_postgres
release_build seckill-app seckill-loadgen
out="${OUT:-loadgen-report/debate}"
loadgen=target/release/seckill-loadgen
mapfile -t names < <("$loadgen" debate --scenarios)
rm -f "$out/scenarios.json"
status=0
# A strategy a scenario does not apply to is skipped by it (reported so).
# shellcheck disable=SC2086 # SCENARIO_FLAGS is a list of flags
"$loadgen" scenario "${names[@]}" \
  --strategies redlock,set-nx-px-token,fenced \
  --trials "${TRIALS:-5}" --quiet \
  --app-bin target/release/seckill-app \
  --database-url "$PG_ADMIN_URL" \
  --out "$out" ${SCENARIO_FLAGS:-} || status=$?
[ -f "$out/scenarios.json" ] || exit "$status"
exec "$loadgen" debate --from "$out/scenarios.json" --out "${DEBATE_OUT:-docs/redlock-debate.md}"
