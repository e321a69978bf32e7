#!/usr/bin/env bash
# Local stack helpers shared by `make demo` (scripts/demo.sh) and
# `make check-panels` (scripts/check_panels.sh). Source this file, set
# STACK_DIR to a state folder first, then call:
#
#   stack_require [with-prometheus]   explain (and, where we may, install) missing packages
#   stack_build                       release binaries of seckill-app and seckill-loadgen
#   stack_up                          PostgreSQL + Redis + 5 Redlock nodes + etcd + ZooKeeper
#                                     + MariaDB + 3 replicas (+ nginx) + the console
#   stack_prometheus <scrape>         Prometheus scraping the replicas, alerts loaded
#   stack_down                        stop exactly what the pid files under STACK_DIR name
#   stack_healthy                     true when every replica of STACK_DIR answers ready
#   stack_restart_replicas <i>...     restart replicas with their extra settings, the rest untouched
#
# Everything lives under STACK_DIR: <name>.pid, <name>.port, <name>.log,
# etcd/, zookeeper/, mariadb/ (data of the coordination servers),
# prometheus.yml, prometheus-data/. PostgreSQL is the checkout's one private
# cluster (scripts/lib.sh: own_postgres, shared with `make test` when the
# machine has no server), in a database of the stack's own; stack_down
# stops it when no other client uses it.
# A port once chosen is kept in <name>.port and taken again next time while
# it is free, so the URLs a person bookmarked stay valid across runs.
# Processes are stopped only when the pid file's process still runs the
# program we started (a recycled pid is left alone).
#
# Variables read: SECKILL_DATABASE_URL (use that database instead of our own
# cluster), SECKILL_ADMIN_TOKEN, SECKILL_SKIP_BUILD=1, SECKILL_NO_INSTALL=1
# (only explain what is missing), STACK_REPLICAS (3), STACK_LB (1: nginx in
# front of the replicas when nginx is installed), STACK_CONSOLE (1: the
# console over the replicas), STACK_BIND (127.0.0.1: the address the
# balancer, the console and Prometheus listen on; the lab image sets
# 0.0.0.0 so that a published port reaches them).

set -euo pipefail

STACK_ROOT=${STACK_ROOT:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}
STACK_DIR=${STACK_DIR:-"$STACK_ROOT/.demo"}
STACK_REPLICAS=${STACK_REPLICAS:-3}
STACK_LB=${STACK_LB:-1}
STACK_BIND=${STACK_BIND:-127.0.0.1}
STACK_TOKEN=${SECKILL_ADMIN_TOKEN:-seckill-demo-admin}
# SECKILL_BIN_DIR (absolute, or relative to the repo) points at other builds,
# e.g. target/debug after `make test` built them there (CI's check-panels).
BIN_DIR=${SECKILL_BIN_DIR:-target/release}
[[ "$BIN_DIR" = /* ]] || BIN_DIR="$STACK_ROOT/$BIN_DIR"
APP_BIN="$BIN_DIR/seckill-app"
LOADGEN_BIN="$BIN_DIR/seckill-loadgen"

. "$STACK_ROOT/scripts/lib.sh"

# ---------------------------------------------------------------- packages

# stack_require [with-prometheus]: the programs the stack runs.
stack_require() {
  local needs=(redis-server:redis-server redis-cli:redis-tools curl:curl python3:python3
    etcd:etcd-server java:default-jre-headless "$ZK_JAR:zookeeper"
    /usr/sbin/mariadbd:mariadb-server mariadb-install-db:mariadb-server mariadb:mariadb-client)
  [[ "${1:-}" == with-prometheus ]] && needs+=(prometheus:prometheus promtool:prometheus)
  [[ -z "${SECKILL_DATABASE_URL:-}" ]] && needs+=(pg:server:postgresql)
  require_packages "${needs[@]}"
}

stack_build() {
  if [[ "${SECKILL_SKIP_BUILD:-0}" == 1 && -x "$APP_BIN" && -x "$LOADGEN_BIN" ]]; then return 0; fi
  if [[ -n "${SECKILL_BIN_DIR:-}" ]]; then # binaries built elsewhere (e.g. target/debug): no release build
    [[ -x "$APP_BIN" && -x "$LOADGEN_BIN" ]] || die "SECKILL_BIN_DIR=$SECKILL_BIN_DIR holds no seckill-app and seckill-loadgen"
    say "binaries of $BIN_DIR (SECKILL_BIN_DIR): no release build"
    return 0
  fi
  [[ -x "$APP_BIN" && -x "$LOADGEN_BIN" ]] || say "first release build: several minutes"
  release_build seckill-app seckill-loadgen 2>&1 | grep -v '^ *Compiling' || true
  [[ -x "$APP_BIN" && -x "$LOADGEN_BIN" ]] || die "the release build failed"
}

# ------------------------------------------------------------- processes

# pick_port <name>: the port of the last run when still free, else a new one.
pick_port() {
  local f="$STACK_DIR/$1.port" p
  if [[ -f "$f" ]]; then p=$(cat "$f"); if port_free "$p"; then echo "$p"; return; fi; fi
  p=$(free_port); echo "$p" > "$f"; echo "$p"
}

# pid_alive <pidfile> <program>: the pid file's process runs <program>.
pid_alive() {
  local pid
  [[ -f "$1" ]] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  # comm is the name the program was started under (15 characters at most).
  local comm; comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ "$comm" == "${2:0:15}" ]]
}

# running <pid>: alive and not a zombie waiting for its parent (a daemon's
# parent is init, which may reap late).
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z ]]
}

# stop_pid <name> <program> [<name> <program>...]: stop the processes of
# STACK_DIR/<name>.pid — all signalled at once, then waited for (a replica
# finishes its in-flight requests), killed after 10 s.
stop_pid() {
  local pids=() names=() f pid
  while [[ $# -ge 2 ]]; do
    f="$STACK_DIR/$1.pid"
    if pid_alive "$f" "$2"; then
      pid=$(cat "$f"); kill "$pid" 2>/dev/null || true
      pids+=("$pid"); names+=("$1 (pid $pid)")
    fi
    rm -f "$f"
    shift 2
  done
  [[ ${#pids[@]} -eq 0 ]] && return 0
  for _ in $(seq 1 100); do
    local alive=0
    for pid in "${pids[@]}"; do if running "$pid"; then alive=1; fi; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do if running "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi; done
  say "stopped ${names[*]}"
}

wait_http() { # wait_http <url> <seconds>
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null && return 0; sleep 0.2; done
  return 1
}

# ------------------------------------------------------------ PostgreSQL

# The checkout's private cluster (scripts/lib.sh, shared with `make test`
# when the machine has no PostgreSQL), in a database of this stack's own:
# `seckill` for the demo, seckill_<folder> for another STACK_DIR
# (check-panels), created fresh for those.
stack_postgres() {
  if [[ -n "${SECKILL_DATABASE_URL:-}" ]]; then
    DB_URL=$SECKILL_DATABASE_URL
    say "PostgreSQL: SECKILL_DATABASE_URL (${DB_URL%%@*}@…); the database must exist"
    STOCK_DB_URL=${SECKILL_STOCK_DATABASE_URL:-} # pg-2pc's second database, if named
    return 0
  fi
  own_postgres
  local db=seckill d
  if [[ "$STACK_DIR" != "$STACK_ROOT/.demo" ]]; then
    db="seckill_$(basename "$STACK_DIR" | tr -c 'a-z0-9\n' _)"
    psql "$OWN_PG_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
    psql "$OWN_PG_URL" -qc "DROP DATABASE IF EXISTS ${db}_stock WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  # ${db}_stock: pg-2pc's stock side, a second database on the same cluster.
  for d in "$db" "${db}_stock"; do
    if [[ -z $(psql "$OWN_PG_URL" -qAtc "select 1 from pg_database where datname = '$d'") ]]; then
      psql "$OWN_PG_URL" -qc "CREATE DATABASE $d" >/dev/null
    fi
  done
  DB_URL="${OWN_PG_URL%/*}/$db"
  STOCK_DB_URL="${OWN_PG_URL%/*}/${db}_stock"
}

# ----------------------------------------------------------------- Redis

start_redis() { # start_redis <name>: (re)start, port in <name>.port
  stop_pid "$1" redis-server >/dev/null
  local port; port=$(pick_port "$1")
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$STACK_DIR" \
    --daemonize yes --pidfile "$STACK_DIR/$1.pid" --logfile "$STACK_DIR/$1.log"
  for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "redis-server $1 did not answer on $port (log $STACK_DIR/$1.log)"
}

# -------------------------------------------- etcd, ZooKeeper, MariaDB


start_etcd() {
  stop_pid etcd etcd >/dev/null
  local port peer; port=$(pick_port etcd); peer=$(pick_port etcd-peer)
  (
    exec setsid etcd --name demo --data-dir "$STACK_DIR/etcd" \
      --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "demo=http://127.0.0.1:$peer" --log-level warn </dev/null >"$STACK_DIR/etcd.log" 2>&1
  ) &
  echo $! > "$STACK_DIR/etcd.pid"
  wait_http "http://127.0.0.1:$port/health" 30 || { tail -5 "$STACK_DIR/etcd.log" >&2; die "etcd did not become healthy (log $STACK_DIR/etcd.log)"; }
  ETCD_URL="http://127.0.0.1:$port"
}

# zk_says <port> <word>: ZooKeeper's answer to a four-letter word.
zk_says() {
  python3 - "$1" "$2" <<'PY' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
s.sendall(sys.argv[2].encode())
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
print(out.decode())
PY
}

start_zookeeper() {
  stop_pid zookeeper java >/dev/null
  local port dir="$STACK_DIR/zookeeper"; port=$(pick_port zookeeper)
  mkdir -p "$dir/data"
  # tickTime 100 ms: session timeouts (= the lock's TTL) from 200 ms.
  printf '%s\n' "tickTime=100" "dataDir=$dir/data" "clientPort=$port" "clientPortAddress=127.0.0.1" \
    "minSessionTimeout=200" "maxSessionTimeout=60000" "admin.enableServer=false" \
    "4lw.commands.whitelist=ruok,srvr" > "$dir/zoo.cfg"
  (
    exec setsid java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dzookeeper.admin.enableServer=false \
      -cp "$ZK_JAR" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" </dev/null >"$STACK_DIR/zookeeper.log" 2>&1
  ) &
  echo $! > "$STACK_DIR/zookeeper.pid"
  local _
  for _ in $(seq 1 300); do
    if zk_says "$port" srvr | grep Mode: >/dev/null; then ZK_URL="127.0.0.1:$port"; return 0; fi
    sleep 0.2
  done
  tail -5 "$STACK_DIR/zookeeper.log" >&2; die "ZooKeeper did not answer on $port (log $STACK_DIR/zookeeper.log)"
}

# A private MariaDB under STACK_DIR/mariadb (root without a password,
# loopback only), unless SECKILL_MYSQL_URL names one.
start_mariadb() {
  if [[ -n "${SECKILL_MYSQL_URL:-}" ]]; then MYSQL_URL=$SECKILL_MYSQL_URL; return 0; fi
  stop_pid mariadb mariadbd >/dev/null
  local port dir="$STACK_DIR/mariadb" _; port=$(pick_port mariadb)
  mkdir -p "$dir"
  if [[ ! -d "$dir/data/mysql" ]]; then
    mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" \
      --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
      || { tail -5 "$dir/install.log" >&2; die "mariadb-install-db failed (log $dir/install.log)"; }
  fi
  (
    exec setsid /usr/sbin/mariadbd --no-defaults --datadir="$dir/data" --user="$(id -un)" --port="$port" \
      --bind-address=127.0.0.1 --socket="$dir/mariadb.sock" --pid-file="$dir/mariadbd.pid" --skip-log-bin \
      --innodb-buffer-pool-size=32M --log-error="$STACK_DIR/mariadb.log" </dev/null >/dev/null 2>&1
  ) &
  echo $! > "$STACK_DIR/mariadb.pid"
  for _ in $(seq 1 150); do
    if mariadb --connect-timeout=2 -h 127.0.0.1 -P "$port" -u root -e 'CREATE DATABASE IF NOT EXISTS seckill' >/dev/null 2>&1; then
      MYSQL_URL="mysql://root@127.0.0.1:$port/seckill"; return 0
    fi
    sleep 0.2
  done
  tail -5 "$STACK_DIR/mariadb.log" >&2; die "MariaDB did not answer on $port (log $STACK_DIR/mariadb.log)"
}

# ------------------------------------------------------------- replicas

replica_urls() { # comma list
  local i out=""
  for i in $(seq 1 "$STACK_REPLICAS"); do out+="${out:+,}http://127.0.0.1:$(cat "$STACK_DIR/app-$i.port")"; done
  echo "$out"
}

# The replicas' wiring, written by stack_up to STACK_DIR/replicas.env and
# read back by stack_restart_replicas (the demo's `restart`): the same
# database, Redis, Redlock nodes, etcd, ZooKeeper and MariaDB.
save_wiring() {
  printf '%s=%q\n' DB_URL "$DB_URL" REDLOCK_URLS "$REDLOCK_URLS" ETCD_URL "$ETCD_URL" \
    ZK_URL "$ZK_URL" MYSQL_URL "$MYSQL_URL" STOCK_DB_URL "${STOCK_DB_URL:-}" > "$STACK_DIR/replicas.env"
}

# start_replica <i>: (re)start replica i. Extra settings (NAME=value lines,
# e.g. SECKILL_LOCK_TTL_MS=100) are read from STACK_DIR/app-<i>.settings
# when that file exists.
start_replica() {
  local name="app-$1" port extra=()
  stop_pid "$name" seckill-app >/dev/null
  port=$(pick_port "$name")
  [[ -f "$STACK_DIR/$name.settings" ]] && mapfile -t extra < "$STACK_DIR/$name.settings"
  (
    cd "$STACK_DIR"
    [[ ${#extra[@]} -eq 0 ]] || export "${extra[@]}"
    SECKILL_LISTEN="127.0.0.1:$port" SECKILL_DATABASE_URL="$DB_URL" \
    SECKILL_REDIS_URL="redis://127.0.0.1:$(cat "$STACK_DIR/redis.port")" \
    SECKILL_REDLOCK_URLS="$REDLOCK_URLS" SECKILL_ADMIN_TOKEN="$STACK_TOKEN" \
    SECKILL_ETCD_URLS="$ETCD_URL" SECKILL_ZOOKEEPER_URL="$ZK_URL" SECKILL_MYSQL_URL="$MYSQL_URL" \
    SECKILL_STOCK_DATABASE_URL="${STOCK_DB_URL:-}" \
    SECKILL_LOG_FORMAT=text RUST_LOG="${RUST_LOG:-info,sqlx=warn}" \
      exec setsid "$APP_BIN" </dev/null >"$STACK_DIR/$name.log" 2>&1
  ) &
  echo $! > "$STACK_DIR/$name.pid"
}

wait_replica() {
  local name="app-$1" url
  url="http://127.0.0.1:$(cat "$STACK_DIR/app-$1.port")"
  if ! wait_http "$url/health/ready" 60; then
    tail -n 15 "$STACK_DIR/$name.log" >&2 || true
    die "$name did not become ready at $url (log $STACK_DIR/$name.log)"
  fi
}

# ---------------------------------------------------------------- console

# start_console: the workshop's control room (seckill-loadgen console) over
# the replicas, on 8089 (Locust's port) when free, else a free port kept in
# console.port. Scenarios started from its page use this stack's binaries,
# PostgreSQL server and MariaDB; their reports go to loadgen-report/console/.
start_console() {
  local port
  stop_pid console seckill-loadgen >/dev/null
  [[ -f "$STACK_DIR/console.port" ]] || echo 8089 > "$STACK_DIR/console.port"
  port=$(pick_port console)
  (
    cd "$STACK_ROOT"
    SECKILL_ADMIN_TOKEN="$STACK_TOKEN" SECKILL_DATABASE_URL="$DB_URL" SECKILL_MYSQL_URL="$MYSQL_URL" \
      exec setsid "$LOADGEN_BIN" console --url "$(replica_urls)" --bind "$STACK_BIND" --port "$port" \
        --app-bin "$APP_BIN" --scenario-out "$STACK_ROOT/loadgen-report/console" \
        </dev/null >"$STACK_DIR/console.log" 2>&1
  ) &
  echo $! > "$STACK_DIR/console.pid"
  wait_http "http://127.0.0.1:$port/api/state" 30 \
    || { tail -n 10 "$STACK_DIR/console.log" >&2; die "the console did not answer (log $STACK_DIR/console.log)"; }
  say "console: http://127.0.0.1:$port/ (the workshop's control room over $(replica_urls | tr ',' ' '))"
}

# ---------------------------------------------------------------- nginx

start_lb() {
  stop_pid lb nginx >/dev/null
  [[ "$STACK_LB" == 1 ]] || return 0
  if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
    say "nginx not installed: no load balancer (optional: sudo apt-get install -y nginx-light); the replicas' URLs are enough"
    return 0
  fi
  local nginx port i servers=""
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  port=$(pick_port lb)
  for i in $(seq 1 "$STACK_REPLICAS"); do
    servers+="        server 127.0.0.1:$(cat "$STACK_DIR/app-$i.port") max_fails=3 fail_timeout=5s;"$'\n'
  done
  mkdir -p "$STACK_DIR/nginx"
  # docker/nginx.conf with local paths and ports.
  cat > "$STACK_DIR/nginx/nginx.conf" <<EOF
# Written by scripts/stack.sh from docker/nginx.conf: local ports and paths.
worker_processes 1;
pid $STACK_DIR/lb.pid;
error_log $STACK_DIR/lb.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    server_tokens off;
    client_max_body_size 16k;
    client_body_temp_path $STACK_DIR/nginx/body;
    proxy_temp_path $STACK_DIR/nginx/proxy;
    fastcgi_temp_path $STACK_DIR/nginx/fastcgi;
    uwsgi_temp_path $STACK_DIR/nginx/uwsgi;
    scgi_temp_path $STACK_DIR/nginx/scgi;
    upstream seckill {
        least_conn;
$servers        keepalive 64;
    }
    server {
        listen $STACK_BIND:$port;
        location = /lb-health { default_type text/plain; return 200 "ok\n"; }
        location / {
            proxy_pass http://seckill;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
            proxy_buffering off;
            error_page 502 504 = @no_replica;
        }
        location @no_replica {
            default_type application/json;
            add_header Retry-After 1 always;
            return 503 '{"error":"unavailable","message":"no replica answered"}';
        }
    }
}
EOF
  if ! "$nginx" -p "$STACK_DIR/nginx" -c "$STACK_DIR/nginx/nginx.conf" -e "$STACK_DIR/lb.log" 2>>"$STACK_DIR/lb.log"; then
    say "nginx did not start (log $STACK_DIR/lb.log): going on without a load balancer"
    return 0
  fi
  wait_http "http://127.0.0.1:$port/lb-health" 10 || say "nginx is not answering on $port (log $STACK_DIR/lb.log)"
}

# ------------------------------------------------------------ Prometheus

# stack_prometheus <name> <scrape interval>: Prometheus scraping every
# replica, prometheus/alerts.yml loaded; config written to <name>.yml and
# checked with promtool.
stack_prometheus() {
  local name=$1 interval=$2 port i targets=""
  stop_pid "$name" prometheus >/dev/null
  port=$(pick_port "$name")
  for i in $(seq 1 "$STACK_REPLICAS"); do targets+="          - 127.0.0.1:$(cat "$STACK_DIR/app-$i.port")"$'\n'; done
  cat > "$STACK_DIR/$name.yml" <<EOF
# Written by scripts/stack.sh from prometheus/prometheus.yml: the same job
# and rules, local replica ports.
global:
  scrape_interval: $interval
  evaluation_interval: $interval
  external_labels:
    stack: seckill-lab
rule_files:
  - $STACK_ROOT/prometheus/alerts.yml
scrape_configs:
  - job_name: seckill
    metrics_path: /metrics
    scrape_interval: $interval
    scrape_timeout: $interval
    static_configs:
      - targets:
$targets  - job_name: prometheus
    static_configs:
      - targets:
          - 127.0.0.1:$port
EOF
  promtool check config "$STACK_DIR/$name.yml" >"$STACK_DIR/$name.check.log" 2>&1 \
    || { cat "$STACK_DIR/$name.check.log" >&2; die "promtool rejects $STACK_DIR/$name.yml"; }
  mkdir -p "$STACK_DIR/$name-data"
  (
    cd "$STACK_DIR"
    exec setsid prometheus --config.file="$STACK_DIR/$name.yml" --storage.tsdb.path="$STACK_DIR/$name-data" \
      --storage.tsdb.retention.time=2d --web.listen-address="$STACK_BIND:$port" --web.enable-lifecycle \
      </dev/null >"$STACK_DIR/$name.log" 2>&1
  ) &
  echo $! > "$STACK_DIR/$name.pid"
  wait_http "http://127.0.0.1:$port/-/ready" 30 \
    || { tail -n 10 "$STACK_DIR/$name.log" >&2; die "Prometheus did not become ready (log $STACK_DIR/$name.log)"; }
  # shellcheck disable=SC2034 # read by the scripts that source this one
  PROM_URL="http://127.0.0.1:$port"
}

# ------------------------------------------------------------ whole stack

stack_up() {
  mkdir -p "$STACK_DIR"
  [[ -x "$APP_BIN" ]] || die "$APP_BIN is missing: cargo build --release -p seckill-app -p seckill-loadgen"
  stack_postgres
  stop_pid redis redis-server redlock-1 redis-server redlock-2 redis-server redlock-3 redis-server \
    redlock-4 redis-server redlock-5 redis-server
  start_redis redis
  REDLOCK_URLS=""
  for i in 1 2 3 4 5; do
    start_redis "redlock-$i"
    REDLOCK_URLS+="${REDLOCK_URLS:+,}redis://127.0.0.1:$(cat "$STACK_DIR/redlock-$i.port")"
  done
  say "Redis: lock store on 127.0.0.1:$(cat "$STACK_DIR/redis.port"), five Redlock nodes on ${REDLOCK_URLS//redis:\/\/127.0.0.1:/}"
  start_etcd
  start_zookeeper
  start_mariadb
  say "etcd on ${ETCD_URL#http://}, ZooKeeper on $ZK_URL, MariaDB on ${MYSQL_URL#*@}"
  # The first replica applies the migrations and seeds; the others follow.
  start_replica 1
  wait_replica 1
  for i in $(seq 2 "$STACK_REPLICAS"); do start_replica "$i"; done
  for i in $(seq 2 "$STACK_REPLICAS"); do wait_replica "$i"; done
  say "replicas: $(replica_urls | tr ',' ' ')"
  save_wiring
  start_lb
  [[ "${STACK_CONSOLE:-1}" == 1 ]] && start_console
  return 0
}

# stack_restart_replicas <i>...: restart those replicas on their ports with
# the wiring stack_up saved (Redis, its keys and the other servers are left
# alone), each with its STACK_DIR/app-<i>.settings, and wait until ready.
stack_restart_replicas() {
  [[ -f "$STACK_DIR/replicas.env" ]] || die "no replicas to restart in $STACK_DIR: run make demo first"
  # shellcheck disable=SC1091
  . "$STACK_DIR/replicas.env"
  local i
  for i in "$@"; do start_replica "$i"; done
  for i in "$@"; do wait_replica "$i"; done
}

stack_healthy() {
  local i
  [[ -f "$STACK_DIR/app-1.port" ]] || return 1
  for i in $(seq 1 "$STACK_REPLICAS"); do
    pid_alive "$STACK_DIR/app-$i.pid" seckill-app || return 1
    curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$(cat "$STACK_DIR/app-$i.port")/health/ready" 2>/dev/null || return 1
  done
}

stack_down() {
  local f name args=()
  [[ -d "$STACK_DIR" ]] || return 0
  for f in "$STACK_DIR"/prometheus*.pid; do [[ -e "$f" ]] && args+=("$(basename "$f" .pid)" prometheus); done
  args+=(console seckill-loadgen lb nginx app seckill-app)   # app: the single replica of the earlier demo script
  for f in "$STACK_DIR"/app-*.pid; do [[ -e "$f" ]] && args+=("$(basename "$f" .pid)" seckill-app); done
  stop_pid "${args[@]}"
  args=()
  for name in redis redlock-1 redlock-2 redlock-3 redlock-4 redlock-5; do args+=("$name" redis-server); done
  args+=(etcd etcd zookeeper java mariadb mariadbd)
  stop_pid "${args[@]}"
  [[ -n "${SECKILL_DATABASE_URL:-}" ]] || stop_own_postgres
}
