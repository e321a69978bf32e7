#!/usr/bin/env bash
# `make atlas [INJECTIONS=10] [CELLS=strategy:fault,…] [QUICK=1]`: every
# lock under every fault. Build the release binaries, make sure
# PostgreSQL (and MariaDB, etcd, ZooKeeper's packages) are there, then
# `seckill-loadgen atlas`: each (strategy, fault) pair measured along the
# fault's size (both ends, then bisection to 5 % of the TTL) for
# exclusion broken and data damaged, or the reason the fault cannot reach
# it. Everything under ${OUT:-loadgen-report/atlas}/; a run of every cell
# writes docs/atlas.{md,json}, docs/zh/atlas.md and docs/atlas/atlas.svg,
# and CELLS=… measures those cells into docs/, keeping the rest. QUICK=1
# runs the fixed sample (one cell per family) under the output folder
# only. Exit 3 when a run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
ensure_postgres
ensure_mariadb
ensure_prepared_transactions "$PG_ADMIN_URL"
release_build seckill-app seckill-loadgen
args=(--app-bin target/release/seckill-app --database-url "$PG_ADMIN_URL"
  --mysql-url "$MYSQL_TEST_URL"
  --out "${OUT:-loadgen-report/atlas}")
[ -n "${INJECTIONS:-}" ] && args+=(--injections "$INJECTIONS")
[ -n "${QUICK:-}" ] && args+=(--quick)
[ -n "${CELLS:-}" ] && args+=(--cells "$CELLS" --write-docs)
exec target/release/seckill-loadgen atlas "${args[@]}"
