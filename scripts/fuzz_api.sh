#!/usr/bin/env bash
# `make fuzz-api`: schemathesis (from PyPI, in .state/venv) against one live
# replica with every backing server of the demo stack (.demo/fuzz-api/),
# driven by the replica's own GET /openapi.json. It passes when no answer
# is a 5xx and every answer matches the document: documented status code,
# content type and body schema. Admin routes get the token.
#
# Left out of the fuzzing, on purpose: GET /api/v1/status/stream (an
# endless event stream) and PUT /admin/faults (the fuzzer would switch on
# ten-minute pauses, which the API allows; `app/tests/it/api.rs` checks its
# bounds).
#
# Variables: FUZZ_MAX_EXAMPLES (25 per operation), FUZZ_SECONDS (time
# budget, 240), SECKILL_BIN_DIR (target/release by default; CI passes
# target/debug).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STACK_DIR="$ROOT/.demo/fuzz-api"
STACK_REPLICAS=1
STACK_LB=0
. scripts/stack.sh

stack_require
# Debian ships venv's pip bootstrap (the ensurepip module) in python3-venv.
require_packages python3:python3 py:ensurepip:python3-venv
[[ -x "$APP_BIN" ]] || SECKILL_SKIP_BUILD=0 stack_build

VENV="$ROOT/.state/venv"
if [[ ! -x "$VENV/bin/schemathesis" ]]; then
  say "installing schemathesis from PyPI into ${VENV#"$ROOT"/}"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check 'schemathesis>=4,<5' \
    || die "pip could not install schemathesis (is PyPI reachable?)"
fi
say "$("$VENV/bin/schemathesis" --version)"

cleanup() { local rc=$?; stack_down >/dev/null 2>&1 || true; exit "$rc"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
stack_up
URL="http://127.0.0.1:$(cat "$STACK_DIR/app-1.port")"

say "schemathesis run $URL/openapi.json"
"$VENV/bin/schemathesis" --no-color run "$URL/openapi.json" \
  --header "Authorization: Bearer $STACK_TOKEN" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --exclude-path /api/v1/status/stream \
  --exclude-name 'PUT /admin/faults' \
  --max-examples "${FUZZ_MAX_EXAMPLES:-25}" \
  --max-time "${FUZZ_SECONDS:-240}" \
  --request-timeout 10 \
  --workers 2 \
  --seed 1 \
  --generation-database none
