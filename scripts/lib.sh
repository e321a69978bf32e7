#!/usr/bin/env bash
# The one shell library of this repository, sourced by the other scripts.
# What is left in shell is what shell does best: Debian packages, and
# starting the Rust programs that do the rest (seckill-lab: the demo stack,
# the checks; lab/src/). It holds, once:
#
#   say / die                        a line to the person running us
#   require_packages <probe:pkg>...  explain missing Debian packages, install them where we may
#   require_stack_packages           those of the demo stack (make demo, check-panels, fuzz-api)
#   pg_answers <url>                 does a PostgreSQL server answer
#   docker_build ARGS...             docker build, without the legacy builder's notice
#   release_build <pkg>...           cargo build --release, and how long it took

set -euo pipefail

SECKILL_ROOT=${SECKILL_ROOT:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}

say() { printf '\033[1m[seckill]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[seckill]\033[0m %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- packages

# require_packages <probe:package>...: a probe is a program on PATH, an
# absolute path, deb:<package> for an installed Debian package, or pg:server for
# PostgreSQL's server programs. Says which Debian packages are missing and
# what they are for; as root (or with password-less sudo) installs them,
# unless SECKILL_NO_INSTALL=1 (then it only explains, and stops).
require_packages() {
  local missing=() probe pkg need
  for need in "$@"; do
    probe=${need%:*}; pkg=${need##*:}
    case $probe in
      deb:*) [[ $(dpkg-query -W -f='${Status}' "${probe#deb:}" 2>/dev/null) == *"ok installed" ]] || missing+=("$pkg") ;;
      /*) [[ -e "$probe" ]] || missing+=("$pkg") ;;
      pg:server) compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null || missing+=("$pkg") ;;
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
      etcd-server) say "  etcd-server: etcd, for etcd-lease" ;;
      zookeeper|default-jre-headless) say "  $pkg: ZooKeeper (and the Java it runs on), for zk-ephemeral-seq" ;;
      mariadb-server|mariadb-client) say "  $pkg: MariaDB, for mysql-get-lock" ;;
      protobuf-compiler|libprotobuf-dev) say "  $pkg: etcd-client compiles etcd's .proto files when it is built" ;;
      chromium) say "  chromium: the status page and report tests load the pages in a browser" ;;
      gcc) say "  gcc: the clock scenarios build a small preload (faults/clockshift)" ;;
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
  # Waits for another install holding the dpkg lock (CI runs two checks at once).
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get could not install ${missing[*]}: install them by hand, then run this again"
}

# require_stack_packages [with-prometheus]: the programs a local stack
# runs (seckill-lab demo, check-panels, stack).
require_stack_packages() {
  local needs=(redis-server:redis-server etcd:etcd-server java:default-jre-headless
    /usr/share/java/zookeeper.jar:zookeeper /usr/sbin/mariadbd:mariadb-server
    mariadb-install-db:mariadb-server mariadb:mariadb-client)
  [[ "${1:-}" == with-prometheus ]] && needs+=(prometheus:prometheus promtool:prometheus)
  [[ -z "${SECKILL_DATABASE_URL:-}" ]] && needs+=(pg:server:postgresql)
  require_packages "${needs[@]}"
}

pg_answers() { pg_isready -q -d "$1" -t 2 >/dev/null 2>&1 && psql "$1" -qAtc 'select 1' >/dev/null 2>&1; }

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
