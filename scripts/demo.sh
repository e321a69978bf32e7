#!/usr/bin/env bash
# `make demo` — the docker-compose stack's shape from local binaries, for
# machines without Docker. Everything lives under .demo/:
#
#   PostgreSQL   a private cluster (initdb + pg_ctl of the installed server
#                packages, run as `postgres` when we are root) on a free
#                port — or the database named by SECKILL_DATABASE_URL
#   Redis        the lock store, plus five independent Redlock nodes
#   etcd, ZooKeeper, MariaDB
#                single nodes on free ports (Debian's etcd-server, zookeeper,
#                mariadb-server), for etcd-lease, zk-ephemeral-seq and
#                mysql-get-lock — or the MariaDB named by SECKILL_MYSQL_URL
#   replicas     three seckill-app (release build) on free ports
#   nginx        a balancer in front of them, when nginx is installed
#   console      the workshop's control room over the replicas (port 8089
#                when free): seckill-loadgen console
#   Prometheus   scraping the replicas with prometheus/alerts.yml loaded
#
# then a short `seckill-loadgen compare` over the three replicas, its table,
# and every URL to open. A second `make demo` restarts what the first one
# started (the PostgreSQL cluster and the ports are reused);
# `make demo-stop` stops exactly what the pid files under .demo/ name.
#
#   scripts/demo.sh [up|stop|urls|check-urls|env]
#   scripts/demo.sh restart [all|1|2|3]... [SECKILL_NAME=value]...
#   scripts/demo.sh restart redlock
#
# `up` writes .demo/env: `source .demo/env` sets A, B, C (the replicas'
# URLs), L (the load generator), SECKILL_ADMIN_TOKEN, REDIS_PORT and
# REDLOCK_PORTS for the workshop's commands; `env` prints it again.
# `restart` restarts the named replicas (default all) on their ports with
# those extra settings, and nothing else: Redis and its keys, the database,
# the faults and the strategy in force stay as they are. A restart without
# settings brings a replica back to the demo's defaults. `restart redlock`
# starts again (empty) the Redlock nodes that were stopped.
#
# Knobs: DEMO_STRATEGIES, DEMO_STOCK (100), DEMO_USERS (50),
# DEMO_WORK_DELAY_MS (5), DEMO_SCRAPE_INTERVAL (2s), SECKILL_DATABASE_URL,
# SECKILL_ADMIN_TOKEN, SECKILL_SKIP_BUILD=1, SECKILL_NO_INSTALL=1.
set -euo pipefail
cd "$(dirname "$0")/.."
STACK_DIR="$(pwd)/.demo"
. scripts/stack.sh

print_urls() {
  local i url lb="" prom=""
  [[ -f "$STACK_DIR/app-1.port" ]] || { say "no demo state in .demo/ — run: make demo"; return 1; }
  pid_alive "$STACK_DIR/lb.pid" nginx && lb="http://127.0.0.1:$(cat "$STACK_DIR/lb.port")"
  pid_alive "$STACK_DIR/prometheus.pid" prometheus && prom="http://127.0.0.1:$(cat "$STACK_DIR/prometheus.port")"
  url="http://127.0.0.1:$(cat "$STACK_DIR/app-1.port")"
  echo
  echo "Open:"
  for i in $(seq 1 "$STACK_REPLICAS"); do
    printf '  replica %s     http://127.0.0.1:%s/   (status page; /metrics, /health/ready)\n' "$i" "$(cat "$STACK_DIR/app-$i.port")"
  done
  [[ -n "$lb" ]] && printf '  balancer      %s/   (nginx over the three replicas)\n' "$lb"
  pid_alive "$STACK_DIR/console.pid" seckill-loadgen \
    && printf '  console       http://127.0.0.1:%s/   (the control room: strategy, load, faults, who holds the lock)\n' "$(cat "$STACK_DIR/console.port")"
  if [[ -n "$prom" ]]; then
    # Debian's Prometheus 2.42 serves its UI under /classic/; newer ones at /.
    local ui="$prom"
    curl -fsS -o /dev/null --max-time 2 "$prom/alerts" 2>/dev/null || ui="$prom/classic"
    printf '  Prometheus    %s/alerts\n' "$ui"
    # The key panels of the Grafana dashboard, as Prometheus graphs.
    local name expr
    while IFS='|' read -r name expr; do
      printf '    %-22s %s/graph?g0.expr=%s&g0.range_input=15m\n' "$name" "$ui" \
        "$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$expr")"
    done <<'PANELS'
oversold units|max by (product) (seckill_oversold_units)
lost updates|max by (product) (seckill_lost_updates)
grabs/s by strategy|sum by (strategy) (rate(seckill_grab_requests_total[1m]))
acquire-wait p99 (s)|histogram_quantile(0.99, sum by (strategy, le) (rate(seckill_lock_acquire_duration_seconds_bucket[1m])))
lost leases|sum by (strategy) (increase(seckill_lock_lost_total[5m]))
PANELS
  fi
  [[ -f "$STACK_DIR/report/report.html" ]] && printf '  report        file://%s/report/report.html   (.md and .json beside it)\n' "$STACK_DIR"
  echo "  audit         curl -H 'Authorization: Bearer $STACK_TOKEN' $url/admin/audit"
  echo "  switch        curl -XPUT -H 'Authorization: Bearer $STACK_TOKEN' -H 'content-type: application/json' -d '{\"strategy\":\"none\"}' $url/admin/strategy"
  echo "  grab          curl -XPOST -H 'content-type: application/json' -d '{\"user_id\":1}' $url/api/v1/products/1/grab"
  echo "  run again     SECKILL_ADMIN_TOKEN=$STACK_TOKEN $LOADGEN_BIN compare --url $(replica_urls) --strategies none,redlock --stock 100 --users 50 --out .demo/report"
  echo "  logs          .demo/*.log, $(own_pg_dir)/postgres.log"
  for i in $(seq 1 "$STACK_REPLICAS"); do
    [[ -s "$STACK_DIR/app-$i.settings" ]] && echo "  replica $i runs with: $(tr '\n' ' ' < "$STACK_DIR/app-$i.settings")(scripts/demo.sh restart $i: back to the defaults)"
  done
  echo
  echo "The workshop's variables (also in .demo/env — in another shell: source .demo/env):"
  sed -n 's/^export /  export /p' "$STACK_DIR/env" 2>/dev/null || true
  echo "Restart replicas with other settings (Redis keys kept): scripts/demo.sh restart all SECKILL_LOCK_TTL_MS=100"
  echo "Stop everything with: make demo-stop"
}

# write_env: .demo/env, the variables the workshop's commands use.
write_env() {
  local urls i ports=""
  IFS=, read -r -a urls <<< "$(replica_urls)"
  for i in 1 2 3 4 5; do ports+="${ports:+ }$(cat "$STACK_DIR/redlock-$i.port")"; done
  {
    echo "# Written by make demo (scripts/demo.sh): the workshop's variables. Use: source .demo/env"
    echo "export A=${urls[0]} B=${urls[1]:-${urls[0]}} C=${urls[2]:-${urls[0]}} L=$LOADGEN_BIN SECKILL_ADMIN_TOKEN=$STACK_TOKEN"
    echo "export REDIS_PORT=$(cat "$STACK_DIR/redis.port") REDLOCK_PORTS='$ports'"
  } > "$STACK_DIR/env"
}

# restart_redlock: start again, empty, the Redlock nodes that are down (a
# workshop exercise stops some); the running ones are left alone.
restart_redlock() {
  local i up=()
  for i in 1 2 3 4 5; do
    if ! pid_alive "$STACK_DIR/redlock-$i.pid" redis-server; then start_redis "redlock-$i"; up+=("$i"); fi
  done
  say "Redlock nodes started again: ${up[*]:-none was down}"
}

# restart [all|N]... [NAME=value]...: see the header.
restart_replicas() {
  local which=() settings=() arg i
  for arg in "$@"; do
    case $arg in
      all) mapfile -t -O "${#which[@]}" which < <(seq 1 "$STACK_REPLICAS") ;;
      redlock) restart_redlock; [[ $# -gt 1 ]] || return 0 ;;
      [0-9]*) [[ $arg -ge 1 && $arg -le $STACK_REPLICAS ]] || die "no replica $arg (1..$STACK_REPLICAS)"; which+=("$arg") ;;
      [A-Z]*=*) settings+=("$arg") ;;
      *) die "usage: scripts/demo.sh restart [all|1..$STACK_REPLICAS]... [SECKILL_NAME=value]..." ;;
    esac
  done
  [[ ${#which[@]} -gt 0 ]] || mapfile -t which < <(seq 1 "$STACK_REPLICAS")
  mapfile -t which < <(printf '%s\n' "${which[@]}" | sort -nu)
  for i in "${which[@]}"; do
    if [[ ${#settings[@]} -gt 0 ]]; then printf '%s\n' "${settings[@]}" > "$STACK_DIR/app-$i.settings"; else rm -f "$STACK_DIR/app-$i.settings"; fi
  done
  stack_restart_replicas "${which[@]}"
  say "restarted replica(s) ${which[*]} ${settings[*]:-with the defaults} (Redis, its keys, the faults and the strategy untouched)"
}

# check_urls: every http URL print_urls shows must answer 200.
check_urls() {
  local url bad=0 n=0
  while read -r url; do
    n=$((n + 1))
    curl -fsS -o /dev/null --max-time 5 "$url" 2>/dev/null || { say "does not answer 200: $url"; bad=1; }
  done < <(print_urls | grep -o 'http://[^ ,]*' | grep -v '/admin/\|/api/v1/products' | sort -u)
  [[ $bad == 0 ]] && say "all $n URLs the demo prints answer 200"
  return $bad
}

case "${1:-up}" in
  stop)
    if [[ ! -d "$STACK_DIR" ]]; then say "nothing to stop (no .demo/)"; exit 0; fi
    stack_down
    say "demo stopped (state kept: ports in .demo/, the database in the checkout's PostgreSQL cluster; the next make demo reuses both)"
    exit 0 ;;
  urls) print_urls; exit ;;
  check-urls) check_urls; exit ;;
  env) cat "$STACK_DIR/env" 2>/dev/null || die "no .demo/env — run: make demo"; exit ;;
  restart) shift; restart_replicas "$@"; exit ;;
  up) ;;
  *) echo "usage: $0 [up|stop|urls|check-urls|env] | restart [all|N]... [SECKILL_NAME=value]..." >&2; exit 2 ;;
esac

started=$SECONDS
stack_require with-prometheus
stack_build
[[ $((SECONDS - started)) -gt 5 ]] && say "build: $((SECONDS - started)) s"
up_started=$SECONDS
mkdir -p "$STACK_DIR"
# Idempotent: what an earlier run left running is stopped first (the
# PostgreSQL cluster is kept running and reused).
# The replicas, nginx and Prometheus are stopped together here (a replica
# takes a moment to finish in-flight requests); Redis is restarted below.
stopping=(console seckill-loadgen lb nginx app seckill-app)
for f in "$STACK_DIR"/prometheus*.pid; do [[ -e "$f" ]] && stopping+=("$(basename "$f" .pid)" prometheus); done
for f in "$STACK_DIR"/app-*.pid; do [[ -e "$f" ]] && stopping+=("$(basename "$f" .pid)" seckill-app); done
stop_pid "${stopping[@]}"
rm -f "$STACK_DIR"/app-*.settings # a new demo: every replica with the defaults
stack_up
write_env
stack_prometheus prometheus "${DEMO_SCRAPE_INTERVAL:-2s}"
say "Prometheus: $PROM_URL (scraping $STACK_REPLICAS replicas every ${DEMO_SCRAPE_INTERVAL:-2s}, rules of prometheus/alerts.yml)"
say "stack up in $((SECONDS - up_started)) s"

STRATEGIES=${DEMO_STRATEGIES:-none,local-mutex,setnx-expire,set-nx-px-token,watchdog,redlock,fenced,zk-ephemeral-seq,etcd-lease,mysql-get-lock,pg-for-update,pg-atomic,redis-lua-stock,pg-2pc}
STOCK=${DEMO_STOCK:-100}
USERS=${DEMO_USERS:-50}
WORK=${DEMO_WORK_DELAY_MS:-5}
say "flash sale over the $STACK_REPLICAS replicas: $STOCK units, $USERS buyers, ${WORK} ms of work inside the lock, per strategy"
rm -rf "$STACK_DIR/report"
load_started=$SECONDS
status=0
SECKILL_ADMIN_TOKEN="$STACK_TOKEN" "$LOADGEN_BIN" compare --url "$(replica_urls)" --strategies "$STRATEGIES" \
  --stock "$STOCK" --users "$USERS" --work-delay-ms "$WORK" --max-run-time 20s --out "$STACK_DIR/report" --quiet \
  || status=$?
say "load generator: $((SECONDS - load_started)) s; whole demo: $((SECONDS - started)) s"
case $status in
  0) ;;
  1) say "a strategy classed safe showed a violation (VIOLATION lines above): worth a look in .demo/report/ and the replicas' logs" ;;
  *) say "seckill-loadgen failed (exit $status, message above); the stack stays up: .demo/*.log" ;;
esac
print_urls
check_urls || true
[[ $status -lt 2 ]] || exit "$status"
