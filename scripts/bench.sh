#!/usr/bin/env bash
# `make bench` (`scripts/bench.sh history`: the history's cost alone): what
# shell does best — pgbench and wrk installed, PostgreSQL answering, the
# release build — then `seckill-lab bench` (lab/src/bench.rs) measures and
# prints each figure beside its floor and its goal; then the clean build
# beside its floor and the demo's first table after it (`seckill-lab
# bench-build`, lab/src/build_floor.rs; `scripts/bench.sh build` alone).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
require_stack_packages with-prometheus
ensure_postgres
if [[ "${1:-}" == build ]]; then
  exec cargo run --quiet --locked --release -p seckill-lab -- bench-build
fi
require_packages pgbench:postgresql-client wrk:wrk
release_build seckill-app seckill-loadgen seckill-lab 2>&1 | grep -v '^ *Compiling'
PG_ADMIN_URL=$PG_ADMIN_URL target/release/seckill-lab bench "$@"
# The build row (twice a clean build's time); BUILD=0 leaves it out.
[[ "${BUILD:-1}" == 0 || "${1:-}" == history ]] || exec target/release/seckill-lab bench-build
