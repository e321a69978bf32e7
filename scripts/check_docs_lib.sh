#!/usr/bin/env bash
# Sourced by the script scripts/check_docs.sh generates from the docs' shell
# blocks (`make check-docs`): the checks it runs between the docs' sections,
# and the line naming the block that failed. Not run on its own.
. scripts/lib.sh

CURRENT="(before the first block)"
SECTION=""
CLEARED=""
# shellcheck disable=SC2154 # rc is assigned inside the trap's own string
trap 'rc=$?; if [[ $rc != 0 ]]; then printf "\n\033[1;31m[seckill]\033[0m check-docs: block %s failed (exit %s)\n" "$CURRENT" "$rc" >&2; fi' EXIT

# cleared_faults_check: once an exercise is over, its faults are cleared and
# no replica runs with extra settings.
cleared_faults_check() {
  local url token now
  [[ -f .demo/app-1.port ]] || return 0
  url="http://127.0.0.1:$(cat .demo/app-1.port)"
  token=${SECKILL_ADMIN_TOKEN:-seckill-demo-admin}
  if [[ -z "$CLEARED" ]]; then
    CLEARED=$(curl -fsS -X DELETE -H "Authorization: Bearer $token" "$url/admin/faults")
    say "the cleared faults (every exercise must end with them): $CLEARED"
    return 0
  fi
  now=$(curl -fsS -H "Authorization: Bearer $token" "$url/admin/faults")
  if [[ "$now" != "$CLEARED" ]]; then
    CURRENT="$CURRENT — at its end the faults are still $now (cleared: $CLEARED)"
    return 1
  fi
  if compgen -G ".demo/app-*.settings" >/dev/null; then
    CURRENT="$CURRENT — at its end a replica still runs with: $(cat .demo/app-*.settings | xargs)"
    return 1
  fi
  say "faults cleared, every replica on the defaults"
}

# section <file> <heading>: called before each block; checks the section
# that just ended when it was the session's preparation or an exercise.
section() {
  local next="$1#$2"
  [[ "$next" == "$SECTION" ]] && return 0
  case ${SECTION#*#} in
    [0-9]*|Before*) cleared_faults_check ;;
  esac
  SECTION=$next
}

# session_minutes <m>...: the session's headings add up to 90 minutes.
session_minutes() {
  local total=0 m
  for m in "$@"; do total=$((total + m)); done
  CURRENT="docs/workshop.md: the session's timings ($*)"
  [[ $total == 90 ]] || { say "the session adds up to $total minutes, not 90"; return 1; }
  say "the session adds up to 90 minutes ($*)"
}
