#!/usr/bin/env bash
# `make bench`: the service's throughput beside the raw floors, measured in
# one run on this machine, each ratio printed with its goal (issue 6).
#
#   pg-atomic / pgbench(same transaction)         goal >= 0.60
#   pg-for-update / pgbench(same transaction)     goal >= 0.60
#   set-nx-px-token / pg-for-update (hot product) goal >= 0.70
#   redlock / pg-for-update (5 nodes, hot)        goal >= 0.50
#   redis-lua-stock / pg-atomic (orders/s)        goal >= 2.00
#   redis-lua-stock orders/s / wrk GET product    goal >= 0.50 (the ceiling:
#     orders committed in batches, BENCH_CEILING_USERS (64) users against
#     wrk with as many connections; batch sizes and added wait printed)
#   goose GET product / wrk (same connections)    goal >= 0.70
#   peak RSS of one replica, 1000 users, beside   goal <= 64 MiB (+ GET p99)
#     the same replica's RSS at rest (its floor)
#   set-nx-px-token with --history / without, at   goal >= 0.90 (the history's
#     the demo's load (50 users, 5 ms of work),    cost, issue 27); alone:
#     alternating, two rounds each                 `scripts/bench.sh history`
#
# Everything runs against the same PostgreSQL (the machine's, or the own
# cluster services.sh starts) and its own redis-servers on free ports.
# BENCH_CLIENTS (16), BENCH_SECONDS (10), BENCH_SYNC (on: the app's default
# synchronous_commit; pgbench sessions get the same) tune it. A load that
# exits non-zero or has any error outcome stops the bench (exit 1): no
# figure is printed from a failing run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
ensure_packages
require_packages pgbench:postgresql-client wrk:wrk
ensure_postgres

C=${BENCH_CLIENTS:-16}
CEILING=${BENCH_CEILING_USERS:-64}
T=${BENCH_SECONDS:-10}
SYNC=${BENCH_SYNC:-on}
STATE=.state/bench
mkdir -p "$STATE"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

release_build seckill-app seckill-loadgen 2>&1 | grep -v '^ *Compiling'

redis_on() {
  redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null &
  PIDS+=($!)
}
REDIS_PORT=$(free_port); redis_on "$REDIS_PORT"
REDLOCK=()
for _ in 1 2 3 4 5; do p=$(free_port); redis_on "$p"; REDLOCK+=("redis://127.0.0.1:$p"); done
for url in "redis://127.0.0.1:$REDIS_PORT" "${REDLOCK[@]}"; do
  for _ in $(seq 50); do redis-cli -u "$url" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -u "$url" ping >/dev/null || { say "redis-server at $url did not answer"; exit 1; }
done

DB=seckill_bench
psql "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
DB_URL=$(with_database "$PG_ADMIN_URL" "$DB")
APP_PORT=$(free_port)
APP="http://127.0.0.1:$APP_PORT"
SECKILL_LISTEN=127.0.0.1:$APP_PORT SECKILL_DATABASE_URL=$DB_URL \
SECKILL_REDIS_URL=redis://127.0.0.1:$REDIS_PORT \
SECKILL_REDLOCK_URLS=$(IFS=,; echo "${REDLOCK[*]}") \
SECKILL_WORK_DELAY_MS=0 SECKILL_SYNCHRONOUS_COMMIT=$SYNC \
SECKILL_SEED_PRODUCTS=1:100000000 RUST_LOG=warn \
  target/release/seckill-app >"$STATE/app.log" 2>&1 &
APP_PID=$!; PIDS+=("$APP_PID")
for _ in $(seq 100); do curl -fs "$APP/health/ready" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$APP/health/ready" >/dev/null || { say "the app did not start: $(tail -5 "$STATE/app.log")"; exit 1; }
# The memory floor: the same replica's resident set at rest, ready, before any load.
IDLE_RSS_KB=$(awk '/^VmRSS:/ {print $2}' "/proc/$APP_PID/status")

STOCK=100000000
reset_db() {
  curl -fs -X POST -H 'Authorization: Bearer seckill-demo-admin' -H 'content-type: application/json' \
    -d "{\"stock\": $STOCK}" "$APP/admin/products/1/reset" >/dev/null
  psql "$DB_URL" -qc "VACUUM ANALYZE orders" -c "VACUUM ANALYZE products" >/dev/null
}

pgbench_tps() { # script
  reset_db
  PGOPTIONS="-c synchronous_commit=$SYNC" pgbench -n -M prepared -c "$C" -j 2 -T "$T" -f "$1" "$DB_URL" 2>/dev/null \
    | awk '/^tps = / && !v {v = $3} END {print v}'
}

# A figure counts only when the load exited 0 and no grab answered with an
# error (503/5xx, transport): otherwise the bench stops here, loudly.
loadgen_run() { # strategy field [users [extra flag]]
  reset_db
  local users=${3:-$C} out="$STATE/run-$1-${3:-$C}${4:-}" rc=0
  target/release/seckill-loadgen run --url "$APP" --strategy "$1" --users "$users" --run-time "${T}s" \
    --stock "$STOCK" --out "$out" --quiet ${4:+"$4"} >/dev/null 2>"$out.stderr" || rc=$?
  if [[ $rc != 0 ]]; then
    say "seckill-loadgen run --strategy $1 exited $rc: no figure ($(tail -n 3 "$out.stderr"))" >&2
    return 1
  fi
  python3 - "$out/report.json" "$2" <<'PYEOF2'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
errors = run["outcomes"].get("error", 0)
if errors:
    sys.exit(f"{run['strategy']}: {errors} grabs answered with an error: no figure")
print(run[sys.argv[2]])
PYEOF2
}

ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
ROWS=()
row() { # name figure floor ratio goal ok
  ROWS+=("$(printf '%-52s %10s %10s %6s %8s %s' "$@")")
}
check() { python3 -c "import sys; sys.exit(0 if $1 else 1)" && echo ok || echo SHORT; }

# The history's cost at the demo's load (make demo: 50 users, 5 ms of work
# in the section): set-nx-px-token on one hot product, without and with
# --history, alternating, two rounds each; grabs/s summed per side.
history_cost() {
  local with=0 without=0 r
  say "the cost of --history: set-nx-px-token, 50 users, work delay 5 ms, alternating"
  curl -fs -X PUT -H 'Authorization: Bearer seckill-demo-admin' -H 'content-type: application/json' \
    -d '{"work_delay_ms": 5}' "$APP/admin/faults" >/dev/null
  for _ in 1 2; do
    r=$(loadgen_run set-nx-px-token grabs_per_sec 50); without=$(python3 -c "print($without+$r)")
    r=$(loadgen_run set-nx-px-token grabs_per_sec 50 --history); with=$(python3 -c "print($with+$r)")
  done
  curl -fs -X PUT -H 'Authorization: Bearer seckill-demo-admin' -H 'content-type: application/json' \
    -d '{"work_delay_ms": 0}' "$APP/admin/faults" >/dev/null
  with=$(python3 -c "print($with/2)"); without=$(python3 -c "print($without/2)")
  row "set-nx-px-token --history vs without (demo load)" "$(printf %.0f "$with")" "$(printf %.0f "$without")" "$(ratio "$with" "$without")" ">=0.90" "$(check "$with/$without>=0.9")"
}

if [[ ${1:-} == history ]]; then
  row "figure" "with" "without" "ratio" "goal" ""
  history_cost
  echo
  echo "scripts/bench.sh history — $(nproc) cores, ${T}s per run, $(date -u +%FT%TZ)"
  printf '%s\n' "${ROWS[@]}"
  psql "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB" 2>/dev/null || true
  exit 0
fi

say "pgbench, pg-atomic transaction ($C clients, ${T}s, synchronous_commit=$SYNC)"
PG_ATOMIC_FLOOR=$(pgbench_tps bench/pgbench/pg-atomic.sql)
say "HTTP pg-atomic"
PG_ATOMIC=$(loadgen_run pg-atomic grabs_per_sec)
PG_ATOMIC_ORDERS=$(python3 -c "import json; print(json.load(open('$STATE/run-pg-atomic-$C/report.json'))['runs'][0]['orders_per_sec'])")
say "pgbench, pg-for-update transaction"
PG_FU_FLOOR=$(pgbench_tps bench/pgbench/pg-for-update.sql)
say "HTTP pg-for-update"
PG_FU=$(loadgen_run pg-for-update grabs_per_sec)
say "HTTP set-nx-px-token"
TOKEN=$(loadgen_run set-nx-px-token grabs_per_sec)
say "HTTP redlock (5 nodes)"
REDLOCK_RATE=$(loadgen_run redlock grabs_per_sec)
say "HTTP redis-lua-stock"
LUA_ORDERS=$(loadgen_run redis-lua-stock orders_per_sec)
say "HTTP redis-lua-stock, the ceiling: $CEILING users"
CEILING_ORDERS=$(loadgen_run redis-lua-stock orders_per_sec "$CEILING")
BATCHES=$(python3 -c "
import json
b = json.load(open('$STATE/run-redis-lua-stock-$CEILING/report.json'))['runs'][0].get('batch')
print('batches: none' if not b else
      f\"{b['batches']} batches, {b['mean_size']:.1f} orders each on average (p99 {b['p99_size']:.0f}); \"
      f\"wait for a batch p50 {b['wait_p50_ms']:.2f} ms, p99 {b['wait_p99_ms']:.2f} ms; commit p99 {b['commit_p99_ms']:.2f} ms\")")

say "wrk vs goose: GET /api/v1/products/1 with $C connections"
WRK=$(wrk -t2 -c "$C" -d "${T}s" "$APP/api/v1/products/1" | awk '/^Requests\/sec:/ {print $2}')
WRK_CEILING=$(wrk -t2 -c "$CEILING" -d "${T}s" "$APP/api/v1/products/1" | awk '/^Requests\/sec:/ {print $2}')
GOOSE=$(target/release/seckill-loadgen probe --url "$APP" --users "$C" --run-time "${T}s" \
  | python3 -c "import json,sys; print(json.load(sys.stdin)['requests_per_sec'])")

say "memory: 1000 concurrent users (GET product, then grabs under set-nx-px-token)"
PROBE_1000=$(target/release/seckill-loadgen probe --url "$APP" --users 1000 --run-time "${T}s")
P99_1000=$(python3 -c "import json,sys; print(f\"{json.loads(sys.argv[1])['p99_ms']:.1f}\")" "$PROBE_1000")
loadgen_run set-nx-px-token grabs_per_sec 1000 >/dev/null
RSS_KB=$(awk '/^VmHWM:/ {print $2}' "/proc/$APP_PID/status")
RSS_MIB=$(python3 -c "print(f'{$RSS_KB/1024:.1f}')")
IDLE_RSS_MIB=$(python3 -c "print(f'{$IDLE_RSS_KB/1024:.1f}')")

row "figure" "ours" "floor" "ratio" "goal" ""
row "pg-atomic grabs/s vs pgbench same tx" "$(printf %.0f "$PG_ATOMIC")" "$(printf %.0f "$PG_ATOMIC_FLOOR")" "$(ratio "$PG_ATOMIC" "$PG_ATOMIC_FLOOR")" ">=0.60" "$(check "$PG_ATOMIC/$PG_ATOMIC_FLOOR>=0.6")"
row "pg-for-update grabs/s vs pgbench same tx" "$(printf %.0f "$PG_FU")" "$(printf %.0f "$PG_FU_FLOOR")" "$(ratio "$PG_FU" "$PG_FU_FLOOR")" ">=0.60" "$(check "$PG_FU/$PG_FU_FLOOR>=0.6")"
row "set-nx-px-token vs pg-for-update grabs/s" "$(printf %.0f "$TOKEN")" "$(printf %.0f "$PG_FU")" "$(ratio "$TOKEN" "$PG_FU")" ">=0.70" "$(check "$TOKEN/$PG_FU>=0.7")"
row "redlock (5 nodes) vs pg-for-update grabs/s" "$(printf %.0f "$REDLOCK_RATE")" "$(printf %.0f "$PG_FU")" "$(ratio "$REDLOCK_RATE" "$PG_FU")" ">=0.50" "$(check "$REDLOCK_RATE/$PG_FU>=0.5")"
row "redis-lua-stock vs pg-atomic orders/s" "$(printf %.0f "$LUA_ORDERS")" "$(printf %.0f "$PG_ATOMIC_ORDERS")" "$(ratio "$LUA_ORDERS" "$PG_ATOMIC_ORDERS")" ">=2.00" "$(check "$LUA_ORDERS/$PG_ATOMIC_ORDERS>=2")"
row "ceiling: redis-lua-stock orders/s vs wrk GET ($CEILING)" "$(printf %.0f "$CEILING_ORDERS")" "$(printf %.0f "$WRK_CEILING")" "$(ratio "$CEILING_ORDERS" "$WRK_CEILING")" ">=0.50" "$(check "$CEILING_ORDERS/$WRK_CEILING>=0.5")"
row "goose GET product req/s vs wrk" "$(printf %.0f "$GOOSE")" "$(printf %.0f "$WRK")" "$(ratio "$GOOSE" "$WRK")" ">=0.70" "$(check "$GOOSE/$WRK>=0.7")"
row "peak RSS at 1000 users vs at rest (MiB)" "$RSS_MIB" "$IDLE_RSS_MIB" "$(ratio "$RSS_MIB" "$IDLE_RSS_MIB")" "<=64MiB" "$(check "$RSS_MIB<=64")"
row "GET product p99 at 1000 users (ms)" "$P99_1000" "-" "-" "printed" ""
history_cost

echo
echo "make bench — $(nproc) cores, $C clients, ${T}s per figure, synchronous_commit=$SYNC, $(date -u +%FT%TZ)"
printf '%s\n' "${ROWS[@]}"
echo "ceiling run ($CEILING users): $BATCHES"
psql "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB" 2>/dev/null || true
