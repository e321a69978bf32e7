#!/usr/bin/env bash
# Shared helpers for `make test`, `make demo` and .ci/run: install what is
# missing from Debian's packages and make sure a PostgreSQL server answers.
# Source it; every step says what it did.
#
# After `ensure_postgres`, PG_ADMIN_URL points at a server where we may
# create databases (the machine's own on 127.0.0.1:5432 when it answers,
# else a cluster of our own under $STATE_DIR on a free port).

set -euo pipefail

STATE_DIR=${STATE_DIR:-"$(pwd)/.state"}

say() { printf '\033[1m[seckill]\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "need root to run: $*"; return 1; fi
}

apt_updated=0
apt_install() {
  # apt_install <command-to-check> <package>...
  local probe=$1; shift
  if command -v "$probe" >/dev/null 2>&1; then return 0; fi
  say "installing $* (missing: $probe)"
  if ! command -v apt-get >/dev/null; then
    say "no apt-get here: install $* with your package manager"; return 1
  fi
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

release_build() {
  # release_build <package>...: cargo build --release of the packages, then
  # how long it took (a no-op build when nothing changed is ~1 s).
  local started=$SECONDS args=()
  for p in "$@"; do args+=(-p "$p"); done
  say "cargo build --release --locked ${args[*]}"
  cargo build --release --locked "${args[@]}"
  say "release build: $((SECONDS - started)) s"
}

pg_bin() {
  # Directory of the newest installed PostgreSQL server binaries.
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  dirname "$(command -v initdb)"
}

ensure_packages() {
  apt_install redis-server redis-server redis-tools
  apt_install psql postgresql-client
  apt_install python3 python3
  apt_install chromium chromium # the status page test (app/tests/it/status.rs)
  apt_install cc gcc # the clock scenarios build a small preload (loadgen/clockshift)
  if [ -z "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null)" ] && ! command -v initdb >/dev/null; then
    apt_install /usr/lib/postgresql/15/bin/initdb postgresql
  fi
  # The coordination-service locks (issue 16): etcd-client compiles etcd's
  # .proto files at build time (protoc); the tests and the demo start their
  # own etcd and ZooKeeper; mysql-get-lock uses MariaDB.
  apt_install protoc protobuf-compiler
  [ -f /usr/include/google/protobuf/descriptor.proto ] || apt_install /usr/include/google/protobuf/descriptor.proto libprotobuf-dev
  apt_install etcd etcd-server
  apt_install java default-jre-headless
  [ -f "$ZK_JAR" ] || apt_install "$ZK_JAR" zookeeper
  apt_install /usr/sbin/mariadbd mariadb-server
  apt_install mariadb mariadb-client
}

# Debian's ZooKeeper: one jar (its dependencies are named in its manifest);
# a standalone server runs as `java -cp "$ZK_CLASSPATH" $ZK_MAIN zoo.cfg`.
ZK_JAR=/usr/share/java/zookeeper.jar
ZK_CLASSPATH="$ZK_JAR:/usr/share/java/zookeeper-jute.jar"
ZK_MAIN=org.apache.zookeeper.server.ZooKeeperServerMain

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

pg_answers() { pg_isready -q -d "$1" -t 2 >/dev/null 2>&1 && psql "$1" -qAtc 'select 1' >/dev/null 2>&1; }

ensure_postgres() {
  local url=${SECKILL_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
  if pg_answers "$url"; then PG_ADMIN_URL=$url; say "PostgreSQL: using $url"; return; fi
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
  start_own_postgres
}

start_own_postgres() {
  # A private cluster: trust auth, loopback only, state under $STATE_DIR/pg.
  local bin dir port owner
  bin=$(pg_bin); dir="$STATE_DIR/pg"
  mkdir -p "$STATE_DIR"
  owner=$(id -un)
  if [ "$(id -u)" = 0 ]; then owner=postgres; id postgres >/dev/null 2>&1 || useradd -r -m postgres; fi
  run_pg() { if [ "$owner" = "$(id -un)" ]; then "$@"; else runuser -u "$owner" -- "$@"; fi; }
  if [ -f "$dir/port" ] && pg_answers "postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres"; then
    PG_ADMIN_URL="postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres"
    say "PostgreSQL: reusing own cluster at $PG_ADMIN_URL"; return
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    say "PostgreSQL: creating own cluster in $dir"
    mkdir -p "$dir/data"; chown -R "$owner" "$dir" 2>/dev/null || true
    chmod 755 "$STATE_DIR" "$dir" 2>/dev/null || true
    run_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
  fi
  port=$(free_port)
  echo "$port" > "$dir/port"
  run_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=on" start >/dev/null
  PG_ADMIN_URL="postgres://postgres@127.0.0.1:$port/postgres"
  say "PostgreSQL: own cluster at $PG_ADMIN_URL (stop: $bin/pg_ctl -D $dir/data stop)"
}

stop_own_postgres() {
  local dir="$STATE_DIR/pg"
  [ -f "$dir/data/postmaster.pid" ] || return 0
  local owner; owner=$(stat -c %U "$dir/data")
  if [ "$owner" = "$(id -un)" ]; then "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
  else runuser -u "$owner" -- "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast stop >/dev/null; fi
  say "stopped own PostgreSQL cluster"
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
