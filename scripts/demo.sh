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
exec scripts/lab.sh demo "$@"
