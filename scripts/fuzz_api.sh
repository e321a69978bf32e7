#!/usr/bin/env bash
# `make fuzz-api`: schemathesis (from PyPI, in .state/venv) against one live
# replica with every backing server of the demo stack (.demo/fuzz-api/),
# driven by the replica's own GET /openapi.json. It passes when no answer
# is a 5xx and every answer matches the document: documented status code,
# content type and body schema. Admin routes get the token.
#
# Every operation is fuzzed, two with a bound:
# - GET /api/v1/status/stream is endless unless `?events=K` bounds it (the
#   document says so); schemathesis reads an event stream until it ends, or
#   until `max-stream-events` events (3 here, in the config file this script
#   writes) or the request timeout, and checks each event it read against
#   the event schema (the `data:` JSON against StatusBody / ErrorBody).
# - PUT /admin/faults: the replica runs with SECKILL_FAULT_DELAY_MAX_MS
#   (FUZZ_FAULT_MAX_MS, 20 ms), so the document's `maximum` of every delay
#   is 20 and the route refuses more (400 invalid_faults): the fuzzer can
#   switch faults on, never a ten-minute pause. The faults it leaves on are
#   printed, then cleared, after the run.
#
# The seed is fresh each run and printed first (and again on failure):
# FUZZ_SEED=<n> make fuzz-api replays it.
#
# Variables: FUZZ_SEED (random by default), FUZZ_MAX_EXAMPLES (25 per
# operation), FUZZ_SECONDS (time budget, 240), FUZZ_FAULT_MAX_MS (20),
# SECKILL_BIN_DIR (target/release by default; CI passes target/debug).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STACK_DIR="$ROOT/.demo/fuzz-api"
. scripts/lib.sh
require_stack_packages
# Debian ships venv's pip bootstrap (the ensurepip module) in python3-venv.
require_packages python3:python3 deb:python3-venv:python3-venv

VENV="$ROOT/.state/venv"
if [[ ! -x "$VENV/bin/schemathesis" ]]; then
  say "installing schemathesis from PyPI into ${VENV#"$ROOT"/}"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check 'schemathesis>=4,<5' \
    || die "pip could not install schemathesis (is PyPI reachable?)"
fi
say "$("$VENV/bin/schemathesis" --version)"

SEED=${FUZZ_SEED:-$(( (RANDOM << 15) | RANDOM ))}
[[ "$SEED" =~ ^[0-9]+$ ]] || die "FUZZ_SEED must be a non-negative integer, not '$SEED'"
say "seed $SEED (replay this run: FUZZ_SEED=$SEED make fuzz-api)"

fuzz_rc=0
stack() { scripts/lab.sh stack "$1" --dir .demo/fuzz-api --replicas 1 "${@:2}"; }
cleanup() {
  local rc=$?
  [[ $fuzz_rc == 0 ]] || say "schemathesis failed with seed $SEED: replay with FUZZ_SEED=$SEED make fuzz-api"
  stack down >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The one replica's own setting: the longest fault delay PUT /admin/faults
# accepts, and its document states.
stack up --set "SECKILL_FAULT_DELAY_MAX_MS=${FUZZ_FAULT_MAX_MS:-20}"
URL="http://127.0.0.1:$(cat "$STACK_DIR/app-1.port")"
TOKEN=${SECKILL_ADMIN_TOKEN:-seckill-demo-admin}

CONFIG="$STACK_DIR/schemathesis.toml"
cat > "$CONFIG" <<TOML
# Written by scripts/fuzz_api.sh. schemathesis keeps its crash cache (what
# \`schemathesis replay\` reads) here, not in the checkout.
[cache]
directory = "$STACK_DIR/schemathesis-cache"

# An event stream is read until it ends or for at most this many events
# (the stream's own ?events=K may end it first).
[[operations]]
include-name = "GET /api/v1/status/stream"
max-stream-events = 3
TOML

say "schemathesis run $URL/openapi.json (seed $SEED)"
"$VENV/bin/schemathesis" --no-color --config-file "$CONFIG" run "$URL/openapi.json" \
  --header "Authorization: Bearer $TOKEN" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples "${FUZZ_MAX_EXAMPLES:-25}" \
  --max-time "${FUZZ_SECONDS:-240}" \
  --request-timeout 10 \
  --workers 2 \
  --seed "$SEED" \
  --generation-database none || fuzz_rc=$?

auth=(-H "Authorization: Bearer $TOKEN")
say "faults the fuzzer left on: $(curl -fsS "${auth[@]}" "$URL/admin/faults" || echo unreadable)"
curl -fsS -X DELETE "${auth[@]}" "$URL/admin/faults" >/dev/null || say "could not clear the faults"
exit "$fuzz_rc"
