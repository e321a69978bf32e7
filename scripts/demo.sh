#!/usr/bin/env bash
# `make demo`: scripts/demo.sh [up|stop|urls|check-urls|env|restart …] —
# seckill-lab demo (lab/src/demo.rs; docs/running.md), after the Debian
# packages the stack runs (installed where we may, explained otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
[[ "${1:-up}" != up ]] || require_stack_packages with-prometheus
# The demo prints its table's time from here, the builds included.
export SECKILL_DEMO_STARTED_MS=${SECKILL_DEMO_STARTED_MS:-$(date +%s%3N)}
# The lab, the service and the load generator in one cargo build, the one
# `make bench-build` times (its first-table row); the lab's own build of
# the other two is then fresh.
if [[ "${1:-up}" == up && -z "${SECKILL_LAB:-}${SECKILL_BIN_DIR:-}" && "${SECKILL_SKIP_BUILD:-}" != 1 ]]; then
  release_build seckill-lab seckill-app seckill-loadgen
fi
exec scripts/lab.sh demo "$@"
