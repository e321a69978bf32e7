#!/usr/bin/env bash
# `make check-panels` — every dashboard query proven against a real
# Prometheus:
#
#   1. the replicas, Redis, five Redlock nodes and PostgreSQL of a running
#      `make demo` are reused; otherwise a stack of our own is started under
#      .demo/check-panels/ (scripts/stack.sh) and stopped at the end;
#   2. a Prometheus of our own scrapes the replicas every second, with
#      prometheus/alerts.yml loaded;
#   3. `promtool check metrics` on a live /metrics of a replica;
#   4. a short `seckill-loadgen compare` over none, set-nx-px-token,
#      watchdog, redlock, fenced and redis-lua-stock (the order batches'
#      panels); then (on our own stack, whose lock TTL
#      is 1 s) a pause past the TTL before the write of one grab in three,
#      over redlock and fenced: the first lost lease and the first fence
#      rejection, which the panels on them must show (not just a 0 series);
#      every load must exit 0 (a violation fails the check);
#   5. scripts/check_panels.py evaluates every panels[].targets[].expr of
#      every dashboards/*.json (rows' nested panels included), the
#      annotations and the template variables through Prometheus' HTTP API,
#      with the variables substituted as Grafana would (All = ".*", then one
#      concrete strategy and replica), and fails on a query error or an
#      empty result.
#
# Needs the release binaries (built when missing: cargo build --release
# -p seckill-app -p seckill-loadgen) and Debian's prometheus, redis-server,
# postgresql packages (explained, and installed where we may, when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
started=$SECONDS

STACK_DIR="$ROOT/.demo"
. scripts/stack.sh

own_stack=0
if stack_healthy; then
  say "reusing the running demo's replicas, Redis and PostgreSQL (.demo/)"
  stack_require with-prometheus
else
  STACK_DIR="$ROOT/.demo/check-panels"
  STACK_LB=0
  STACK_CONSOLE=0
  own_stack=1
  # Short enough that a pause can outlive it within the check's seconds.
  export SECKILL_LOCK_TTL_MS=${SECKILL_LOCK_TTL_MS:-1000}
  stack_require with-prometheus
  if [[ ! -x "$APP_BIN" || ! -x "$LOADGEN_BIN" ]]; then SECKILL_SKIP_BUILD=0 stack_build; fi
fi
[[ -x "$LOADGEN_BIN" ]] || SECKILL_SKIP_BUILD=0 stack_build

cleanup() {
  local rc=$?
  stop_pid prometheus-check prometheus >/dev/null
  if [[ $own_stack == 1 ]]; then stack_down >/dev/null; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ $own_stack == 1 ]]; then
  # Two replicas are enough for every panel; three match the stack.
  stack_up
fi
stack_prometheus prometheus-check 1s
say "Prometheus: $PROM_URL (scrape every 1 s; config ${STACK_DIR#"$ROOT"/}/prometheus-check.yml)"

replica1="http://127.0.0.1:$(cat "$STACK_DIR/app-1.port")"
say "promtool check metrics on $replica1/metrics"
curl -fsS "$replica1/metrics" >"$STACK_DIR/metrics.txt"
if ! promtool check metrics <"$STACK_DIR/metrics.txt"; then
  die "promtool check metrics found problems in $replica1/metrics (copy in $STACK_DIR/metrics.txt)"
fi
echo "ok   promtool check metrics ($(grep -c '^seckill_' "$STACK_DIR/metrics.txt") seckill_ samples)"

wait_scrapes() { prom_wait_scrapes "$PROM_URL" "$1" "$2" "$STACK_REPLICAS"; }

# A first scrape of every replica before the load, so that rate() sees
# each counter's first increase.
wait_scrapes "$(date +%s)" 1
load_start=$(date +%s)
say "load: none, set-nx-px-token, watchdog, redlock, fenced, redis-lua-stock over $(replica_urls | tr ',' ' ')"
SECKILL_ADMIN_TOKEN="$STACK_TOKEN" "$LOADGEN_BIN" compare --url "$(replica_urls)" \
  --strategies "${CHECK_PANELS_STRATEGIES:-none,set-nx-px-token,watchdog,redlock,fenced,redis-lua-stock}" \
  --stock 40 --users 20 --work-delay-ms 2 --run-time "${CHECK_PANELS_RUN_TIME:-4s}" --out "$STACK_DIR/panels-report" --quiet \
  || die "seckill-loadgen compare failed (exit $?): a violation or a failing service must not pass this check"

positive=()
if [[ $own_stack == 1 ]]; then
  pause=$((SECKILL_LOCK_TTL_MS + 400))
  say "provoking a lost lease and a fence rejection: pause ${pause} ms (TTL ${SECKILL_LOCK_TTL_MS} ms) before the write of one grab in 3, redlock and fenced"
  admin_faults() {
    curl -fsS -X PUT -H "Authorization: Bearer $STACK_TOKEN" -H 'Content-Type: application/json' \
      -d "$1" "$replica1/admin/faults" >/dev/null
  }
  admin_faults "{\"pause_ms\": $pause, \"pause_every\": 3, \"pause_at\": \"before-write\"}"
  rc=0
  SECKILL_ADMIN_TOKEN="$STACK_TOKEN" "$LOADGEN_BIN" compare --url "$(replica_urls)" \
    --strategies redlock,fenced --stock 40 --users 8 --run-time 4s --out "$STACK_DIR/panels-pause-report" --quiet \
    || rc=$?
  admin_faults '{"pause_ms": 0, "pause_every": 1, "pause_at": "before-read"}'
  [[ $rc == 0 ]] || die "seckill-loadgen compare under the pause failed (exit $rc)"
  positive=(--positive seckill_lock_lost_total --positive seckill_fence_rejections_total)
else
  say "a running demo (lock TTL 30 s) is reused: the lost-lease and fence-rejection panels are checked for series, not for events"
fi
# Two more scrapes of every replica after the last grab.
wait_scrapes "$(date +%s)" 2

python3 scripts/check_panels.py --prometheus "$PROM_URL" --since "$load_start" \
  --instance "127.0.0.1:$(cat "$STACK_DIR/app-1.port")" --strategy "${CHECK_PANELS_STRATEGY:-redlock}" \
  --replicas "$STACK_REPLICAS" "${positive[@]}" dashboards/*.json
say "check-panels passed in $((SECONDS - started)) s"
