#!/usr/bin/env bash
# `make demo`: PostgreSQL (the machine's, or our own cluster), a private
# redis-server, one seckill-app replica — then a flash-sale burst against
# each strategy and the audit of every run. `make demo-stop` stops exactly
# what this started (state in .demo/).
set -euo pipefail
cd "$(dirname "$0")/.."
STATE_DIR="$(pwd)/.demo"
. scripts/services.sh
mkdir -p "$STATE_DIR"

stop_pidfile() {
  local f=$1
  if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then kill "$(cat "$f")" 2>/dev/null || true; say "stopped $(basename "$f" .pid) (pid $(cat "$f"))"; fi
  rm -f "$f"
}

if [ "${1:-}" = stop ]; then
  stop_pidfile "$STATE_DIR/app.pid"
  stop_pidfile "$STATE_DIR/redis.pid"
  for i in 1 2 3 4 5; do stop_pidfile "$STATE_DIR/redlock-$i.pid"; done
  stop_own_postgres
  exit 0
fi

ensure_packages
ensure_postgres
DB_URL=${SECKILL_DATABASE_URL:-$(with_database "$PG_ADMIN_URL" seckill_demo)}
if ! psql "$DB_URL" -qAtc 'select 1' >/dev/null 2>&1; then
  psql "$PG_ADMIN_URL" -qc "CREATE DATABASE seckill_demo" >/dev/null
  say "created database seckill_demo"
fi

# Idempotent: whatever an earlier `make demo` left running is replaced.
stop_pidfile "$STATE_DIR/app.pid"
stop_pidfile "$STATE_DIR/redis.pid"
for i in 1 2 3 4 5; do stop_pidfile "$STATE_DIR/redlock-$i.pid"; done

start_redis() { # start_redis <name> -> prints the port
  local port; port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize yes --pidfile "$STATE_DIR/$1.pid" --logfile "$STATE_DIR/$1.log"
  for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$port"
}
REDIS_PORT=$(start_redis redis)
say "Redis: own redis-server on 127.0.0.1:$REDIS_PORT"
REDLOCK_URLS=""
for i in 1 2 3 4 5; do
  REDLOCK_URLS="$REDLOCK_URLS${REDLOCK_URLS:+,}redis://127.0.0.1:$(start_redis "redlock-$i")"
done
say "Redlock: five independent redis-servers ($REDLOCK_URLS)"

say "building seckill-app (release; the first build takes a few minutes)"
cargo build --release --locked -p seckill-app -q

APP_PORT=${DEMO_PORT:-$(free_port)}
URL="http://127.0.0.1:$APP_PORT"
TOKEN=${SECKILL_ADMIN_TOKEN:-seckill-demo-admin}
SECKILL_LISTEN="127.0.0.1:$APP_PORT" SECKILL_DATABASE_URL="$DB_URL" \
SECKILL_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" SECKILL_ADMIN_TOKEN="$TOKEN" \
SECKILL_REDLOCK_URLS="$REDLOCK_URLS" \
  nohup target/release/seckill-app >"$STATE_DIR/app.log" 2>&1 &
echo $! > "$STATE_DIR/app.pid"
for _ in $(seq 1 100); do curl -fs "$URL/health/ready" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$URL/health/ready" >/dev/null || { say "seckill-app did not become ready; see $STATE_DIR/app.log"; tail -5 "$STATE_DIR/app.log"; exit 1; }
say "seckill-app: $URL (log $STATE_DIR/app.log)"

STRATEGIES=${DEMO_STRATEGIES:-none,local-mutex,setnx,setnx-expire,setnx-expire-lua,setnx-getset,set-nx-px,set-nx-px-check-del,set-nx-px-token,watchdog,redlock,fenced,pg-lock-table,pg-for-update,pg-optimistic,pg-advisory,pg-atomic,redis-lua-stock}
say "flash sale: 50 units, 200 buyers at once, 5 ms of work inside the lock, per strategy"
echo
python3 scripts/burst.py --url "$URL" --token "$TOKEN" --strategies "$STRATEGIES" --stock 50 --users 200 --work-delay-ms 5
echo
cat <<EOT
Open:
  product      curl $URL/api/v1/products/1
  grab         curl -XPOST -H 'content-type: application/json' -d '{"user_id":1}' $URL/api/v1/products/1/grab
  audit        curl -H 'Authorization: Bearer $TOKEN' $URL/admin/audit
  switch       curl -XPUT -H 'Authorization: Bearer $TOKEN' -H 'content-type: application/json' -d '{"strategy":"none"}' $URL/admin/strategy
  metrics      $URL/metrics
  health       $URL/health/ready
Stop everything with: make demo-stop
EOT
