#!/usr/bin/env bash
# Helpers for `make test`, `make bench`, `make bench-locks`, `make scenarios`
# and .ci/run, on top of scripts/lib.sh: install what is missing from
# Debian's packages and
# make sure a PostgreSQL server and MariaDB answer. Source it; every step
# says what it did.
#
# After `ensure_postgres`, PG_ADMIN_URL points at a server where we may
# create databases (the machine's own on 127.0.0.1:5432 when it answers,
# else the checkout's private cluster, the one `make demo` uses too).

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "need root to run: $*"; return 1; fi
}

ensure_packages() {
  local needs=(redis-server:redis-server redis-cli:redis-tools psql:postgresql-client python3:python3
    chromium:chromium chromedriver:chromium-driver cc:gcc pg:server:postgresql
    protoc:protobuf-compiler /usr/include/google/protobuf/descriptor.proto:libprotobuf-dev
    etcd:etcd-server java:default-jre-headless /usr/share/java/zookeeper.jar:zookeeper
    /usr/sbin/mariadbd:mariadb-server mariadb:mariadb-client)
  require_packages "${needs[@]}"
}

# ensure_node_redlock: node-redlock 5.0 (pinned in bench/node-redlock's
# package-lock.json) for lock-bench's comparator rows; without Node.js or
# the npm registry the bench prints those rows as skipped.
ensure_node_redlock() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    say "node/npm not installed (apt-get install -y nodejs npm): lock-bench skips the node-redlock rows"
    return 0
  fi
  [ -d bench/node-redlock/node_modules/redlock ] && return 0
  say "installing node-redlock 5.0 into bench/node-redlock/node_modules (npm ci)"
  (cd bench/node-redlock && npm ci --no-audit --no-fund --loglevel=error) ||
    say "npm ci failed: lock-bench skips the node-redlock rows"
}

mariadb_answers() { mariadb --connect-timeout=2 -h 127.0.0.1 -P "${2:-3306}" -u "$1" -e 'select 1' >/dev/null 2>&1; }

ensure_mariadb() {
  # After it, MYSQL_TEST_URL names a MariaDB on 127.0.0.1:3306 that the
  # tests may take GET_LOCK on: `root` without a password when that works,
  # else a `seckill` user created here (Debian's root logs in by socket only).
  MYSQL_TEST_URL=${SECKILL_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}
  if [ -n "${SECKILL_TEST_MYSQL_URL:-}" ]; then say "MariaDB: using $MYSQL_TEST_URL"; return; fi
  if ! mariadb_answers root && ! mariadb_answers seckill && ! as_root mariadb -u root -e 'select 1' >/dev/null 2>&1; then
    say "MariaDB is down: starting /usr/sbin/mariadbd"
    as_root mkdir -p /run/mysqld
    as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
    as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
    for _ in $(seq 1 60); do
      { mariadb_answers root || as_root mariadb -u root -e 'select 1' >/dev/null 2>&1; } && break
      sleep 0.5
    done
  fi
  if mariadb_answers root; then
    mariadb -h 127.0.0.1 -u root -e 'CREATE DATABASE IF NOT EXISTS test' >/dev/null 2>&1 || true
  elif mariadb_answers seckill; then
    MYSQL_TEST_URL=mysql://seckill@127.0.0.1:3306/test
  elif as_root mariadb -u root -e 'select 1' >/dev/null 2>&1; then
    say "MariaDB: root logs in by socket only; creating user seckill@127.0.0.1 (no password) for the tests"
    as_root mariadb -u root -e "CREATE DATABASE IF NOT EXISTS test;
      CREATE USER IF NOT EXISTS 'seckill'@'127.0.0.1'; CREATE USER IF NOT EXISTS 'seckill'@'localhost';
      GRANT ALL ON test.* TO 'seckill'@'127.0.0.1'; GRANT ALL ON test.* TO 'seckill'@'localhost';"
    MYSQL_TEST_URL=mysql://seckill@127.0.0.1:3306/test
  else
    say "MariaDB does not answer on 127.0.0.1:3306: the mysql-get-lock tests will fail"
    return 0
  fi
  say "MariaDB: using $MYSQL_TEST_URL"
}

ensure_postgres() {
  local url=${SECKILL_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
  if pg_answers "$url"; then PG_ADMIN_URL=$url; say "PostgreSQL: using $url"; ensure_prepared_transactions "$url"; return; fi
  # The machine's cluster may only be stopped.
  if [ -z "${SECKILL_TEST_DATABASE_URL:-}" ] && command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    local version
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    if [ -n "$version" ]; then
      say "PostgreSQL on 5432 is down: starting cluster $version/main"
      as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start >/dev/null 2>&1 || true
      for _ in $(seq 1 30); do pg_answers "$url" && break; sleep 0.5; done
      if pg_answers "$url"; then PG_ADMIN_URL=$url; say "PostgreSQL: using $url"; return; fi
    fi
  fi
  # The checkout's own cluster (lab/src/stack/postgres.rs), in the debug
  # profile `make test` builds anyway.
  PG_ADMIN_URL=$(SECKILL_BIN_DIR=target/debug scripts/lab.sh own-postgres | tail -n 1)
}

# ensure_prepared_transactions URL: `pg-2pc` prepares transactions
# (PREPARE TRANSACTION), which a server with max_prepared_transactions = 0
# refuses. The machine's cluster is set to 64 (ALTER SYSTEM) and restarted
# once; a server we cannot restart is left as it is and `pg-2pc` says it is
# unavailable there.
ensure_prepared_transactions() {
  local url=$1 now version
  now=$(psql "$url" -qAtc "show max_prepared_transactions" 2>/dev/null || echo "")
  [[ -z "$now" || "$now" != 0 ]] && return 0
  if [ -z "${SECKILL_TEST_DATABASE_URL:-}" ] && command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    say "PostgreSQL: max_prepared_transactions is 0; setting 64 for pg-2pc and restarting cluster $version/main"
    psql "$url" -qAtc "ALTER SYSTEM SET max_prepared_transactions = 64" >/dev/null &&
      as_root pg_ctlcluster --skip-systemctl-redirect "$version" main restart >/dev/null 2>&1 || true
    for _ in $(seq 1 30); do pg_answers "$url" && break; sleep 0.5; done
  fi
  now=$(psql "$url" -qAtc "show max_prepared_transactions" 2>/dev/null || echo "?")
  [[ "$now" == 0 ]] && say "PostgreSQL: max_prepared_transactions is 0 at $url: pg-2pc's tests skip"
  return 0
}

with_database() { echo "${1%/*}/$2"; }

drop_test_databases() {
  local names
  names=$(psql "$PG_ADMIN_URL" -qAtc "select datname from pg_database where datname like 'seckill_test_%'" 2>/dev/null || true)
  [ -z "$names" ] && return 0
  # Names are seckill_test_<pid>_<uuid>: keep those of test runs still alive.
  local dropped=0 pid
  for n in $names; do
    pid=$(echo "$n" | cut -d_ -f3)
    if [ -n "$pid" ] && [ "$pid" -eq "$pid" ] 2>/dev/null && kill -0 "$pid" 2>/dev/null; then continue; fi
    psql "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $n WITH (FORCE)" >/dev/null 2>&1 || true
    dropped=$((dropped + 1))
  done
  [ $dropped -gt 0 ] && say "dropped $dropped test databases of finished runs"
  return 0
}
