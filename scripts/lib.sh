#!/usr/bin/env bash
# The one shell library of this repository: sourced by scripts/services.sh
# (`make test`, `make bench`, `make scenarios`, `make bench-locks`) and by
# scripts/stack.sh (`make demo`, `make check-panels`). It holds what both
# need, once:
#
#   say / die                        a line to the person running us
#   require_packages <probe:pkg>...  explain missing Debian packages, install them where we may
#   free_port / port_free <port>     loopback ports
#   pg_bindir / pg_answers <url>     PostgreSQL's server programs; does a server answer
#   own_postgres                     the checkout's one private PostgreSQL cluster (OWN_PG_URL)
#   stop_own_postgres                stop it when no client uses it any more
#   prom_wait_scrapes <url> ...      Prometheus has scraped every replica N times
#   docker_build ARGS...             docker build, without the legacy builder's notice
#   release_build <pkg>...           cargo build --release, and how long it took
#
# Every wait below is a readiness check (a query, a ping), never a fixed sleep.

set -euo pipefail

SECKILL_ROOT=${SECKILL_ROOT:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}

# Debian's ZooKeeper: one jar; a standalone server is its main class.
# shellcheck disable=SC2034 # used by the scripts that source this one
ZK_JAR=/usr/share/java/zookeeper.jar

say() { printf '\033[1m[seckill]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[seckill]\033[0m %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- packages

pg_bindir() {
  # The newest installed PostgreSQL server programs (Debian keeps them off PATH).
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$d" && -x "$d/initdb" && -x "$d/pg_ctl" ]]; then echo "$d"; return 0; fi
  # Other distributions put them on PATH.
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then dirname "$(command -v pg_ctl)"; return 0; fi
  return 1
}

# require_packages <probe:package>...: a probe is a program on PATH, an
# absolute path, py:<module> for a Python module, or pg:server for
# PostgreSQL's server programs. Says which Debian packages are missing and
# what they are for; as root (or with password-less sudo) installs them,
# unless SECKILL_NO_INSTALL=1 (then it only explains, and stops).
require_packages() {
  local missing=() probe pkg need
  for need in "$@"; do
    probe=${need%:*}; pkg=${need##*:}
    case $probe in
      py:*) python3 -c "import ${probe#py:}" >/dev/null 2>&1 || missing+=("$pkg") ;;
      /*) [[ -e "$probe" ]] || missing+=("$pkg") ;;
      pg:server) pg_bindir >/dev/null || missing+=("$pkg") ;;
      *) command -v "$probe" >/dev/null 2>&1 || missing+=("$pkg") ;;
    esac
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  say "missing packages: ${missing[*]}"
  for pkg in "${missing[@]}"; do
    case $pkg in
      redis-server) say "  redis-server: the lock store, the five Redlock nodes, the tests' own servers" ;;
      redis-tools) say "  redis-tools: redis-cli, to see that each redis-server answers" ;;
      postgresql) say "  postgresql: initdb and pg_ctl for a private cluster (or set SECKILL_DATABASE_URL)" ;;
      postgresql-client) say "  postgresql-client: psql and pg_isready" ;;
      prometheus) say "  prometheus: the Prometheus server and promtool" ;;
      docker-compose) say "  docker-compose: validates docker-compose.yml (no Docker engine needed)" ;;
      python3-yaml) say "  python3-yaml: PyYAML for scripts/check_stack.py" ;;
      etcd-server) say "  etcd-server: etcd, for etcd-lease" ;;
      zookeeper|default-jre-headless) say "  $pkg: ZooKeeper (and the Java it runs on), for zk-ephemeral-seq" ;;
      mariadb-server|mariadb-client) say "  $pkg: MariaDB, for mysql-get-lock" ;;
      protobuf-compiler|libprotobuf-dev) say "  $pkg: etcd-client compiles etcd's .proto files when it is built" ;;
      chromium) say "  chromium: the status page and report tests load the pages in a browser" ;;
      gcc) say "  gcc: the clock scenarios build a small preload (loadgen/clockshift)" ;;
      *) say "  $pkg" ;;
    esac
  done
  say "install them with:  sudo apt-get install -y --no-install-recommends ${missing[*]}"
  local sudo=()
  if [[ "${SECKILL_NO_INSTALL:-0}" == 1 ]] || ! command -v apt-get >/dev/null; then
    die "then run this again"
  fi
  if [[ $(id -u) != 0 ]]; then
    sudo -n true 2>/dev/null || die "then run this again"
    sudo=(sudo -n)
  fi
  say "installing them now (SECKILL_NO_INSTALL=1 only explains)"
  "${sudo[@]}" apt-get update -qq || true
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get could not install ${missing[*]}: install them by hand, then run this again"
}

# ------------------------------------------------------------------- ports

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port_free() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

# ------------------------------------------------------------- PostgreSQL

pg_answers() { pg_isready -q -d "$1" -t 2 >/dev/null 2>&1 && psql "$1" -qAtc 'select 1' >/dev/null 2>&1; }

# Run a PostgreSQL server program as the cluster's owner: `postgres` when
# we are root (initdb refuses root), else ourselves.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# The checkout's private cluster lives in .state/pg. As root the cluster
# belongs to `postgres`; when that user cannot reach the checkout (a clone
# under /root or a 0700 mktemp folder) it lives under postgres' own home
# instead — we never chmod folders we did not create.
own_pg_dir() {
  local dir="$SECKILL_ROOT/.state/pg"
  if [[ $(id -u) == 0 ]]; then
    id postgres >/dev/null 2>&1 || useradd --system --create-home --home-dir /var/lib/postgresql postgres
    mkdir -p "$SECKILL_ROOT/.state"
    if ! runuser -u postgres -- test -x "$SECKILL_ROOT/.state"; then
      dir="$(getent passwd postgres | cut -d: -f6)/seckill-lab-$(printf '%s' "$SECKILL_ROOT" | cksum | cut -d' ' -f1)/pg"
    fi
  fi
  echo "$dir"
}

# own_postgres: the one private cluster of this checkout (trust auth,
# loopback only, max_connections 200, max_prepared_transactions 64 for
# pg-2pc — three demo replicas' pools and the
# tests fit). Reused when it answers, started when it exists, created
# otherwise. `make test` (when the machine's server is down), `make bench`
# and `make demo` / `make check-panels` all share it, each in its own
# databases. Sets OWN_PG_URL (database `postgres`) and OWN_PG_DIR.
own_postgres() {
  local bin data port
  bin=$(pg_bindir) || die "PostgreSQL server programs are missing: sudo apt-get install -y postgresql"
  OWN_PG_DIR=$(own_pg_dir); data="$OWN_PG_DIR/data"
  if [[ -f "$OWN_PG_DIR/port" ]] && pg_answers "postgres://postgres@127.0.0.1:$(cat "$OWN_PG_DIR/port")/postgres"; then
    OWN_PG_URL="postgres://postgres@127.0.0.1:$(cat "$OWN_PG_DIR/port")/postgres"
    say "PostgreSQL: reusing own cluster at $OWN_PG_URL"
    return 0
  fi
  mkdir -p "$OWN_PG_DIR"
  if [[ $(id -u) == 0 ]]; then chown postgres: "$OWN_PG_DIR"; fi
  if [[ ! -f "$data/PG_VERSION" ]]; then
    say "PostgreSQL: creating own cluster in $OWN_PG_DIR ($bin/initdb)"
    as_pg "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-sync >"$OWN_PG_DIR/initdb.log" 2>&1 \
      || { tail -5 "$OWN_PG_DIR/initdb.log"; die "initdb failed (log: $OWN_PG_DIR/initdb.log)"; }
  fi
  as_pg "$bin/pg_ctl" -D "$data" -m fast stop >/dev/null 2>&1 || true # a stale half-started one
  port=$(free_port)
  if [[ -f "$OWN_PG_DIR/port" ]] && port_free "$(cat "$OWN_PG_DIR/port")"; then port=$(cat "$OWN_PG_DIR/port"); fi
  echo "$port" > "$OWN_PG_DIR/port"
  # pg_ctl -w returns once the server accepts connections (its own readiness check).
  as_pg "$bin/pg_ctl" -D "$data" -l "$OWN_PG_DIR/postgres.log" -w -t 60 \
    -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200 -c max_prepared_transactions=64" start >/dev/null \
    || { tail -5 "$OWN_PG_DIR/postgres.log" >&2 || true; die "PostgreSQL did not start (log: $OWN_PG_DIR/postgres.log)"; }
  OWN_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
  say "PostgreSQL: own cluster at $OWN_PG_URL (log $OWN_PG_DIR/postgres.log)"
}

# stop_own_postgres: stop the private cluster, unless a client still uses
# it (a test run beside the demo, or the other stack).
stop_own_postgres() {
  local dir bin url users
  dir=$(own_pg_dir)
  [[ -f "$dir/data/postmaster.pid" && -f "$dir/port" ]] || return 0
  bin=$(pg_bindir) || return 0
  url="postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres"
  users=$(psql "$url" -qAtc "select count(*) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()" 2>/dev/null || echo 0)
  if [[ "$users" != 0 ]]; then
    say "own PostgreSQL cluster left running: $users other connections use it"
    return 0
  fi
  as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 && say "stopped own PostgreSQL cluster"
  return 0
}

# -------------------------------------------------------------- Prometheus

# prom_wait_scrapes <url> <since> <count> <replicas>: block until the
# Prometheus at <url> has scraped every replica of job `seckill` at least
# <count> times since <since> (Unix seconds): readiness read from
# Prometheus, not a sleep.
prom_wait_scrapes() { # prometheus-url since count replicas
  python3 - "$1" "$2" "$3" "$4" <<'PYWAIT'
import json, sys, time, urllib.parse, urllib.request
prom, since, count, replicas = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
deadline = time.time() + 30
while time.time() < deadline:
    window = max(1, int(time.time() - since) + 1)
    query = f'count_over_time(up{{job="seckill"}}[{window}s])'
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        result = json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
    except OSError:
        result = []
    if len(result) >= replicas and all(float(r["value"][1]) >= count for r in result):
        sys.exit(0)
    time.sleep(0.2)
sys.exit(f"Prometheus did not scrape {replicas} replicas {count} times within 30 s")
PYWAIT
}

# --------------------------------------------------------------- building

# docker_build ARGS...: `docker build`, without the legacy builder's
# deprecation notice (a client >= 23 prints it on every build where buildx
# is missing, as with Debian's docker.io).
docker_build() {
  docker build "$@" 2> >(grep -v -e 'DEPRECATED: The legacy builder' -e 'Install the buildx component' \
    -e 'docs.docker.com/go/buildx' -e '^ *$' >&2)
}

release_build() {
  # release_build <package>...: cargo build --release of the packages, then
  # how long it took (a no-op build when nothing changed is ~1 s).
  local started=$SECONDS args=()
  for p in "$@"; do args+=(-p "$p"); done
  command -v cargo >/dev/null || die "cargo is missing: install Rust from https://rustup.rs (then run this again)"
  say "cargo build --release --locked ${args[*]}"
  (cd "$SECKILL_ROOT" && cargo build --release --locked "${args[@]}")
  say "release build: $((SECONDS - started)) s"
}
