#!/usr/bin/env bash
# scripts/lab.sh ARGS...: seckill-lab (lab/src/) with these arguments —
# SECKILL_LAB when set (a built one: the lab image's, the docs check's
# own), else through cargo, in the profile of SECKILL_BIN_DIR (release
# unless it names a debug build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${SECKILL_LAB:-}" ]]; then exec "$SECKILL_LAB" "$@"; fi
profile=(--release)
[[ "${SECKILL_BIN_DIR:-}" == *debug* ]] && profile=()
exec cargo run --quiet --locked "${profile[@]}" -p seckill-lab -- "$@"
