#!/usr/bin/env bash
# `make scenarios [S="gc-pause clock-jump"]`: build the release binaries,
# make sure PostgreSQL answers, then run the fault scenarios (all of them by
# default). The runner starts and stops its own replicas, redis-servers and
# proxies on free ports and creates (then drops) a database of its own.
#
# Each run keeps its own report, side by side with the others:
# loadgen-report/scenarios/<names>/scenarios.{json,md,html}, <names> being
# S with `+` between the names (`all` without S; OUT=dir overrides it).
# `make scenarios-table` (`seckill-loadgen scenario-table`) puts every
# report's rows in one table — the newest run of each case — and writes it
# to loadgen-report/scenarios/table.md.
#
# Knobs: S, OUT, SCENARIO_FLAGS (e.g. "--quick --quiet"), SECKILL_BIN_DIR
# (binaries already built elsewhere, e.g. target/debug after `make test`:
# no release build).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
REPORTS=loadgen-report/scenarios

ensure_packages
ensure_postgres
ensure_mariadb
BIN_DIR=${SECKILL_BIN_DIR:-target/release}
if [[ -n "${SECKILL_BIN_DIR:-}" ]]; then
  [[ -x "$BIN_DIR/seckill-app" && -x "$BIN_DIR/seckill-loadgen" ]] || die "SECKILL_BIN_DIR=$BIN_DIR holds no seckill-app and seckill-loadgen"
  say "binaries of $BIN_DIR (SECKILL_BIN_DIR): no release build"
else
  release_build seckill-app seckill-loadgen
fi
names=${S:-all}
out=${OUT:-$REPORTS/$(echo "$names" | xargs | tr ' ' '+')}
status=0
# shellcheck disable=SC2086 # S is a list of scenario names; SCENARIO_FLAGS and ARGS lists of flags
"$BIN_DIR/seckill-loadgen" scenario $names \
  --app-bin "$BIN_DIR/seckill-app" \
  --database-url "$PG_ADMIN_URL" \
  --mysql-url "$MYSQL_TEST_URL" \
  --out "$out" ${SCENARIO_FLAGS:-} ${ARGS:-} || status=$?
if [[ $names == replay* ]]; then say "replays: $out/replays.json (each variant's case under $out/<id>/<variant>/)"; else say "report: $out/scenarios.{md,html,json}; every run's rows in one table: make scenarios-table"; fi
exit "$status"
