#!/usr/bin/env bash
# `make scenarios [S="gc-pause clock-jump"]`: build the release binaries,
# make sure PostgreSQL answers, then run the fault scenarios (all of them by
# default). The runner starts and stops its own replicas, redis-servers and
# proxies on free ports and creates (then drops) a database of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
ensure_postgres
ensure_mariadb
release_build seckill-app seckill-loadgen
# shellcheck disable=SC2086 # S is a list of scenario names
exec target/release/seckill-loadgen scenario ${S:-all} \
  --app-bin target/release/seckill-app \
  --database-url "$PG_ADMIN_URL" \
  --mysql-url "$MYSQL_TEST_URL" \
  --out "${OUT:-loadgen-report}" ${SCENARIO_FLAGS:-}
