#!/usr/bin/env bash
# `make test`: install what is missing, make sure PostgreSQL answers, then
# run every test. Each integration test creates its own database and starts
# its own redis-server (and etcd, ZooKeeper where it needs them) on a free
# port; the machine's Redis is never touched. MariaDB (mysql-get-lock) is the
# machine's, started when it is down.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
# lab's check-k8s test renders deploy/k8s (kubectl), reads the compose file
# (docker-compose) and validates in a virtualenv (python3-venv).
require_packages kubectl:kubectl docker-compose:docker-compose deb:python3-venv:python3-venv
ensure_postgres
ensure_mariadb
drop_test_databases
export SECKILL_TEST_DATABASE_URL=$PG_ADMIN_URL
export SECKILL_TEST_MYSQL_URL=$MYSQL_TEST_URL
# --no-fail-fast: one failing test binary does not hide the others' results.
say "running cargo test (SECKILL_TEST_DATABASE_URL=$PG_ADMIN_URL)"
status=0
cargo test --locked --no-fail-fast "$@" || status=$?
# bench/ is not a default member (its binaries are built for `make bench`
# only); its unit tests (the goal arithmetic, the tables) run here.
if [[ $# -eq 0 ]]; then
  say "running bench's unit tests"
  cargo test --locked -p seckill-bench --lib || status=$?
fi
drop_test_databases
exit $status
