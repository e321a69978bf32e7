#!/usr/bin/env bash
# Stand-ins for the images docker/Dockerfile and docker-compose.yml name,
# for a Docker engine that cannot pull them (no registry answers, as on the
# machines this project is developed on). They exist only so that
# `make docker-images` and `make check-docker` can run there; the compose
# file and the Dockerfile never name them, and where the real image is
# present or can be pulled, it is used and nothing is built.
#
#   docker/standins/make.sh [TAG...]     every image below, or those tags
#
# Each stand-in has the official image's tag and is built FROM the local
# debian:bookworm-slim with Debian's package of the same server, honouring
# exactly the variables, commands, paths and health checks that
# docker-compose.yml uses for its service (each Dockerfile lists them).
# The base itself is made by mmdebstrap (minbase, docs and locales left
# out as in the official slim image); the machine's extra CA certificates
# (/usr/local/share/ca-certificates) go into it, so apt and cargo inside a
# build trust what the machine trusts. rust:1-bookworm carries the
# machine's own Rust toolchain.
#
# Grafana has no Debian package, so grafana/grafana has no stand-in: the
# live check leaves that one service out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../../scripts/lib.sh"

# tag | stand-in folder (base: mmdebstrap)
STANDINS=(
  "debian:bookworm-slim|base"
  "rust:1-bookworm|rust"
  "redis:7.4-bookworm|redis"
  "postgres:16-bookworm|postgres"
  "zookeeper:3.9|zookeeper"
  "quay.io/coreos/etcd:v3.5.17|etcd"
  "mariadb:11.4|mariadb"
  "nginx:1.27-alpine|nginx"
  "prom/prometheus:v2.53.3|prometheus"
)

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

make_base() {
  require_packages mmdebstrap:mmdebstrap
  local hooks=()
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    hooks+=(--customize-hook='copy-in /usr/local/share/ca-certificates /usr/local/share')
  fi
  # The official slim image's dpkg filters (no manuals, docs but their
  # copyright files, or translations) and its apt setting that deletes
  # downloaded packages once installed (/etc/apt/apt.conf.d/docker-clean).
  hooks+=(--customize-hook='printf "%s\n" "APT::Keep-Downloaded-Packages \"false\";" "DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" > "$1/etc/apt/apt.conf.d/docker-clean"')
  mmdebstrap --quiet --variant=minbase \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    "${hooks[@]}" bookworm - | docker import -c 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
}

make_rust() {
  command -v rustc >/dev/null || die "rustc is missing: the rust:1-bookworm stand-in carries this machine's toolchain"
  local sysroot ctx
  sysroot=$(rustc --print sysroot)
  ctx=$(mktemp -d /var/tmp/seckill-rust-standin.XXXXXX)
  # Hard links where the sysroot shares the file system, copies otherwise.
  cp -al "$sysroot/bin" "$sysroot/lib" "$sysroot/libexec" "$ctx/" 2>/dev/null \
    || cp -a "$sysroot/bin" "$sysroot/lib" "$sysroot/libexec" "$ctx/"
  docker_build -q -f "$here/rust/Dockerfile" -t rust:1-bookworm "$ctx" >/dev/null \
    || { rm -rf "$ctx"; die "the rust:1-bookworm stand-in did not build"; }
  rm -rf "$ctx"
}

make_one() { # make_one <tag> <folder>
  local tag=$1 dir=$2 started=$SECONDS
  if have_image "$tag"; then return 0; fi
  if docker pull -q "$tag" >/dev/null 2>&1; then say "pulled $tag"; return 0; fi
  [[ $dir == base ]] || have_image debian:bookworm-slim || make_one debian:bookworm-slim base
  case $dir in
    base) make_base ;;
    rust) make_rust ;;
    *) docker_build -q -f "$here/$dir/Dockerfile" -t "$tag" "$here" >/dev/null \
         || die "the stand-in for $tag did not build (docker build -f docker/standins/$dir/Dockerfile docker/standins)" ;;
  esac
  say "stand-in $tag built ($((SECONDS - started)) s, $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1 / 1e6}'))"
}

command -v docker >/dev/null || die "docker is missing"
wanted=("$@")
for entry in "${STANDINS[@]}"; do
  tag=${entry%|*}; dir=${entry#*|}
  if [[ ${#wanted[@]} -gt 0 ]] && ! printf '%s\n' "${wanted[@]}" | grep -xF "$tag" >/dev/null; then continue; fi
  make_one "$tag" "$dir"
done
