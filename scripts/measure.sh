#!/usr/bin/env bash
# `make debate` / `make atlas` (the Makefile says what each measures and
# writes): the release binaries, PostgreSQL (the atlas: MariaDB and
# prepared transactions too), then the command with make's variables as
# flags — INJECTIONS, OUT, and ROWS (debate) or CELLS and QUICK (atlas;
# CELLS measures those cells into docs/, keeping the rest; RECHECK=1 runs
# both ends of their brackets in docs/atlas.json again instead). Exit 3
# when a run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
ensure_postgres
release_build seckill-app seckill-loadgen
args=(--app-bin target/release/seckill-app --database-url "$PG_ADMIN_URL" --out "${OUT:-loadgen-report/$1}")
if [[ "$1" == debate ]]; then
  exec target/release/seckill-loadgen debate "${args[@]}" --injections "${INJECTIONS:-20}" ${ROWS:+--rows "$ROWS"} --write-docs
fi
ensure_mariadb
ensure_prepared_transactions "$PG_ADMIN_URL"
args+=(--mysql-url "$MYSQL_TEST_URL" ${INJECTIONS:+--injections "$INJECTIONS"} ${QUICK:+--quick})
if [[ -n "${RECHECK:-}" ]]; then
  exec target/release/seckill-loadgen atlas "${args[@]}" --recheck ${CELLS:+--cells "$CELLS"}
fi
exec target/release/seckill-loadgen atlas "${args[@]}" ${CELLS:+--cells "$CELLS" --write-docs}
