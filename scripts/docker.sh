#!/usr/bin/env bash
# The Docker paths of seckill-lab, as a user takes them:
#
#   scripts/docker.sh images    `make docker-images`: seckill-lab/{app,loadgen,lab}:local
#                               from docker/Dockerfile (the release build runs
#                               inside Docker), with their build times and sizes
#   scripts/docker.sh check     `make check-docker`: the images above, then
#                               docker-compose.yml brought up for real, checked,
#                               and taken down with its volumes
#   scripts/docker.sh ci        CI's check: the app and loadgen runtime images
#                               from the binaries CI already built (no second
#                               compile; BuildKit builds only those stages), then
#                               the same compose check with fewer strategies
#
# A Docker engine is started when none answers (dockerd, as root); Debian's
# docker.io and docker-compose are installed when missing. Where an image
# cannot be pulled (no registry answers), docker/standins/make.sh makes a
# stand-in of the same tag first. Grafana has no stand-in (no Debian
# package): the live check runs every service but `grafana`, whose
# provisioning files `make check-stack` checks offline.
#
# The check runs as compose project `seckill-check` (containers, network and
# volumes named seckill-check_*), publishing the stack's own ports 8080 and
# 9090 (3000 stays free: no Grafana), and on exit — pass, failure or Ctrl-C —
# takes it down with its volumes and verifies that no container, network or
# volume of the project is left.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh

PROJECT=seckill-check
# The check takes the stack's default path: a token made for it. (A .env
# that sets SECKILL_ADMIN_TOKEN fails read_token, which says so.)
unset SECKILL_ADMIN_TOKEN
TOKEN= # the stack's own, read once it is up (read_token)
LB=http://127.0.0.1:8080
PROM=http://127.0.0.1:9090
PROJECT_LABEL="label=com.docker.compose.project=$PROJECT"
COMPOSE=(docker-compose -p "$PROJECT" -f "$ROOT/docker-compose.yml")
# The loadgen job's --url list: every replica by its compose name.
REPLICA_URLS=(--url http://app-1:8080 --url http://app-2:8080 --url http://app-3:8080)
OUT="$ROOT/.state/check-docker"

# ------------------------------------------------------------ the engine

ensure_docker() {
  require_packages docker:docker.io dockerd:docker.io docker-compose:docker-compose jq:jq curl:curl
  if docker info >/dev/null 2>&1; then return 0; fi
  [[ $(id -u) == 0 ]] || die "no Docker engine answers and we are not root: start dockerd (or add yourself to the docker group)"
  local log=/var/log/seckill-dockerd.log
  say "no Docker engine answers: starting dockerd (log $log)"
  (setsid dockerd </dev/null >"$log" 2>&1 &)
  for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && return 0; sleep 0.5; done
  tail -n 20 "$log" >&2 || true
  die "dockerd did not start (log $log)"
}

image_size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }

# ---------------------------------------------------------------- images

build_images() {
  docker/standins/make.sh debian:bookworm-slim rust:1-bookworm
  local target started
  for target in app loadgen lab; do
    started=$SECONDS
    say "docker build -f docker/Dockerfile --target $target -t seckill-lab/$target:local ."
    docker_build -q -f docker/Dockerfile --target "$target" -t "seckill-lab/$target:local" . >/dev/null \
      || die "the $target image did not build: docker build -f docker/Dockerfile --target $target ."
    say "seckill-lab/$target:local built in $((SECONDS - started)) s, $(image_size "seckill-lab/$target:local")"
  done
}

# A docker client that builds with BuildKit (only the stages a target
# needs): `docker buildx`, or a client older than 23 with DOCKER_BUILDKIT=1
# (Debian bookworm's docker.io is 20.10).
buildkit_build() {
  if docker buildx version >/dev/null 2>&1; then docker buildx build --load "$@"; return; fi
  local client
  for client in docker /usr/bin/docker; do
    command -v "$client" >/dev/null || continue
    if [[ $("$client" version --format '{{.Client.Version}}' 2>/dev/null) =~ ^(1[0-9]|2[0-2])\. ]]; then
      DOCKER_BUILDKIT=1 "$client" build "$@"; return
    fi
  done
  die "no docker client builds with BuildKit here: install docker-buildx (or Debian's docker.io)"
}

build_prebuilt_images() {
  local bin_dir=$1 started=$SECONDS
  [[ -x "$bin_dir/seckill-app" && -x "$bin_dir/seckill-loadgen" ]] || die "$bin_dir has no seckill-app and seckill-loadgen: build them first"
  docker/standins/make.sh debian:bookworm-slim
  rm -rf .docker-prebuilt && mkdir -p .docker-prebuilt
  cp "$bin_dir/seckill-app" "$bin_dir/seckill-loadgen" .docker-prebuilt/
  local target status=0
  for target in app loadgen; do
    buildkit_build -q -f docker/Dockerfile --target "$target-prebuilt" -t "seckill-lab/$target:local" . >/dev/null || status=$?
    [[ $status == 0 ]] || break
    say "seckill-lab/$target:local from $bin_dir ($(image_size "seckill-lab/$target:local"))"
  done
  rm -rf .docker-prebuilt
  [[ $status == 0 ]] || die "the runtime images did not build from $bin_dir"
  say "runtime images from prebuilt binaries: $((SECONDS - started)) s"
}

# ------------------------------------------------------------ the stack

# Every service but Grafana (no image to run here) and the loadgen job.
stack_services() { "${COMPOSE[@]}" config --services | grep -vx 'grafana\|loadgen'; }

# The volumes there were before the check (VOLUMES_BEFORE): any other one
# at the end is the run's, anonymous ones included (they carry no label).
new_volumes() { comm -13 <(printf '%s\n' "${VOLUMES_BEFORE:-}" | sort -u) <(docker volume ls -q | sort -u); }
project_leftovers() {
  { docker ps -aq --filter "$PROJECT_LABEL"; docker network ls -q --filter "$PROJECT_LABEL"; docker volume ls -q --filter "$PROJECT_LABEL"; new_volumes; } | grep -v '^$' | sort -u
}

take_down() {
  say "docker-compose down -v (project $PROJECT)"
  "${COMPOSE[@]}" --profile load down -v --remove-orphans --timeout 20 >/dev/null 2>&1 || true
  local left
  left=$(project_leftovers)
  if [[ -n "$left" ]]; then
    say "left behind by down -v (now removed):"; echo "$left"
    docker ps -aq --filter "$PROJECT_LABEL" | xargs -r docker rm -f -v >/dev/null 2>&1 || true
    new_volumes | xargs -r docker volume rm >/dev/null 2>&1 || true
    return 1
  fi
  say "nothing of project $PROJECT is left: no container, network or volume (anonymous ones counted)"
}

# wait_healthy <seconds>: every container of the project running and, where
# it has a health check, healthy; a one-shot (admin-token) exited with 0.
wait_healthy() {
  local deadline=$((SECONDS + $1)) states
  while ((SECONDS < deadline)); do
    states=$(docker ps -aq --filter "$PROJECT_LABEL" \
      | xargs -r docker inspect -f '{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.State.ExitCode}}')
    if [[ -n "$states" ]] && ! grep -qv ' \(running \(healthy\|none\)\|exited none\) 0$' <<<"$states"; then
      say "healthy: $(awk '{print $1}' <<<"$states" | sort | tr '\n' ' ')"
      return 0
    fi
    sleep 1
  done
  echo "$states" >&2
  return 1
}

admin() { # admin METHOD PATH [JSON] — through the balancer
  curl -fsS -X "$1" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' ${3:+-d "$3"} "$LB$2"
}

in_replica() { # in_replica N PATH — GET from inside replica N's container
  "${COMPOSE[@]}" exec -T "app-$1" curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:8080$2"
}

json() { jq -r "$1"; }

# read_token: the stack's admin token, as its admin-token service made it
# (no SECKILL_ADMIN_TOKEN here: a random one), printed in that service's
# log; the README's demo token must be refused.
read_token() {
  local demo=seckill-demo-admin got
  TOKEN=$("${COMPOSE[@]}" exec -T console cat /var/lib/seckill/admin-token) || die "no admin token in the stack's volume"
  [[ ${#TOKEN} -ge 16 && $TOKEN != "$demo" ]] || die "the stack's admin token is '$TOKEN': not a made one (does .env set SECKILL_ADMIN_TOKEN?)"
  "${COMPOSE[@]}" logs --no-color admin-token | grep -F "$TOKEN" >/dev/null || die "docker-compose logs admin-token does not print the token"
  got=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $demo" "$LB/admin/strategies")
  [[ $got == 401 ]] || die "the stack answered $got to the demo token, not 401"
  echo "ok   this stack's own admin token (${#TOKEN} characters, printed by docker-compose logs admin-token); the demo token is refused (401)"
}
# seckill-lab (lab/src/) in the debug profile: the panels, the Prometheus
# targets and the compare report are read back through their types there.
lab() { SECKILL_BIN_DIR=target/debug scripts/lab.sh "$@"; }

check_shared_state() {
  local i got
  admin PUT /admin/strategy '{"strategy": "redlock"}' >/dev/null
  admin PUT /admin/faults '{"work_delay_ms": 7}' >/dev/null
  for i in 1 2 3; do
    got=$(in_replica "$i" /admin/strategies | json .active)
    [[ $got == redlock ]] || die "app-$i's active strategy is $got after PUT /admin/strategy redlock through the balancer"
    got=$(in_replica "$i" /admin/faults | json .work_delay_ms)
    [[ $got == 7 ]] || die "app-$i's work_delay_ms is $got after PUT /admin/faults through the balancer"
  done
  admin PUT /admin/faults '{"work_delay_ms": 0}' >/dev/null
  admin PUT /admin/strategy '{"strategy": "set-nx-px-token"}' >/dev/null
  echo "ok   one strategy and one fault set: a switch through the balancer reached app-1, app-2 and app-3"
}

# check_console: the console's page and state through its published port,
# every replica seen, and a fault switched through it reaching each one.
check_console() {
  local console=http://127.0.0.1:8089 i got auth=(-H "Authorization: Bearer $TOKEN")
  # It listens on 0.0.0.0 in its container: without the token, nothing.
  got=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$console/api/reset")
  [[ $got == 401 ]] || die "the console answered $got to a reset without the admin token, not 401"
  curl -fsS "${auth[@]}" "$console/" | grep 'data-testid="timeline"' >/dev/null || die "the console's page at $console/ has no timeline"
  got=$(curl -fsS "${auth[@]}" "$console/api/state" | json '[.replicas[] | select(.strategy and (.error | not))] | length')
  [[ $got == 3 ]] || die "the console sees $got healthy replicas of 3 ($console/api/state)"
  curl -fsS "${auth[@]}" -X PUT -H 'Content-Type: application/json' -d '{"unlock_before_commit": true}' "$console/api/faults" >/dev/null \
    || die "PUT /api/faults through the console failed"
  for i in 1 2 3; do
    got=$(in_replica "$i" /admin/faults | json .unlock_before_commit)
    [[ $got == true ]] || die "app-$i's unlock_before_commit is $got after the console switched it on"
  done
  curl -fsS "${auth[@]}" -X POST "$console/api/reset" >/dev/null || die "POST /api/reset through the console failed"
  got=$(curl -fsS "${auth[@]}" "$console/api/state" | json '.faults_in_force | length')
  [[ $got == 0 ]] || die "after the console's reset $got faults are still in force"
  echo "ok   the console (127.0.0.1:8089) refuses a reset without the token (401); with it, sees app-1, app-2 and app-3; a fault switched in it reached each; its reset cleared it"
}

grabs_of() { # grabs_of N: grab requests replica N has counted
  in_replica "$1" /metrics | awk '/^seckill_grab_requests_total/ {n += $NF} END {printf "%d\n", n}'
}

# grab_through_lb COUNT FIRST_USER: grabs through the balancer; every answer
# must be the API's (201, 409 or 429), never the balancer's 502/503.
grab_through_lb() {
  local n=$1 user=$2 code bad=0
  for _ in $(seq 1 "$n"); do
    code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -X POST -H 'Content-Type: application/json' \
      -d "{\"user_id\": $user}" "$LB/api/v1/products/1/grab" || true)
    user=$((user + 1))
    case $code in 201|409|429) ;; *) bad=$((bad + 1)); say "grab through the balancer answered $code" ;; esac
  done
  return $bad
}

check_balancer() {
  local i before=() after
  admin POST /admin/products/1/reset '{"stock": 1000}' >/dev/null
  for i in 1 2 3; do before[i]=$(grabs_of "$i"); done
  grab_through_lb 60 500000 || die "the balancer answered for the replicas"
  for i in 1 2 3; do
    after=$(grabs_of "$i")
    ((after > before[i])) || die "app-$i got none of 60 grabs through the balancer"
    echo "ok   balancer: app-$i served $((after - before[i])) of 60 grabs"
  done
  say "docker-compose kill app-3: the balancer must leave it out"
  "${COMPOSE[@]}" kill app-3 >/dev/null 2>&1
  grab_through_lb 30 600000 || die "with app-3 killed, grabs through the balancer failed"
  echo "ok   balancer: 30 grabs answered by the API with app-3 killed"
  "${COMPOSE[@]}" start app-3 >/dev/null 2>&1
  wait_healthy 120 || die "app-3 did not come back healthy"
  grab_through_lb 30 700000 || die "after app-3 came back, grabs through the balancer failed"
  echo "ok   balancer: app-3 back (docker-compose start), 30 more grabs answered"
}

# run_loadgen DIR [ARGS...]: the compose file's loadgen job as it is
# defined (its own command unless ARGS are given; reports in its volume),
# then its /reports copied into DIR on the host.
run_loadgen() {
  local dir=$1 name="$PROJECT-loadgen" status=0; shift
  rm -rf "$dir" && mkdir -p "$dir"
  docker rm -f "$name" >/dev/null 2>&1 || true
  "${COMPOSE[@]}" --profile load run --name "$name" loadgen "$@" || status=$?
  if ! docker cp "$name:/reports/." "$dir/" && [[ $status == 0 ]]; then status=1; fi
  docker rm -f -v "$name" >/dev/null 2>&1 || true
  return "$status"
}


check_stack() { # check_stack full|quick
  local mode=$1 started=$SECONDS services images
  ensure_docker
  # The images the services run (ours are built above; Grafana has no stand-in).
  mapfile -t images < <("${COMPOSE[@]}" config | awk '$1 == "image:" {print $2}' | grep -v '^seckill-lab/\|^grafana/' | sort -u)
  docker/standins/make.sh "${images[@]}"
  for image in seckill-lab/app:local seckill-lab/loadgen:local; do
    docker image inspect "$image" >/dev/null 2>&1 || die "$image is missing: make docker-images"
  done
  for port in 8080 8089 9090; do
    ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || die "port $port is taken on 127.0.0.1 (a running demo? make demo-stop): the compose stack publishes it"
  done
  mapfile -t services < <(stack_services)
  VOLUMES_BEFORE=$(docker volume ls -q)
  trap 'take_down || true' EXIT
  trap 'exit 130' INT TERM
  "${COMPOSE[@]}" --profile load down -v --remove-orphans >/dev/null 2>&1 || true
  say "docker-compose up -d ${services[*]} (grafana left out: no image here)"
  local up_started=$SECONDS
  "${COMPOSE[@]}" up -d --no-build "${services[@]}" 2>&1 | grep -v '^Creating\|^Starting' || true
  wait_healthy 300 || die "the stack did not become healthy in 300 s (docker-compose -p $PROJECT logs)"
  say "stack healthy in $((SECONDS - up_started)) s"

  lab prometheus-up "$PROM" 3 || die "Prometheus: see above"
  read_token
  check_shared_state
  check_console

  local strategies=()
  if [[ $mode == quick ]]; then
    # shellcheck disable=SC2054 # the commas are inside one argument, --strategies' list
    strategies=(compare "${REPLICA_URLS[@]}"
      --strategies none,local-mutex,set-nx-px-token,redlock,zk-ephemeral-seq,etcd-lease,mysql-get-lock,pg-atomic,redis-lua-stock
      --stock 50 --users 50 --out /reports)
  fi
  local load_start
  load_start=$(date +%s)
  say "docker-compose --profile load run loadgen ${strategies[*]:-(its own command: compare over app-1, app-2, app-3)}"
  run_loadgen "$OUT/compare" "${strategies[@]}" || die "the loadgen job failed (exit $?): report in $OUT/compare"
  local load_end
  load_end=$(date +%s)
  lab judge-compare "$OUT/compare" || die "the compare report breaks a promise ($OUT/compare/report.json)"

  # seckill-lab panels (lab/src/panels.rs) waits for two scrapes of each
  # replica first, and evaluates the panels 10 s after the load ended.
  lab panels --prometheus "$PROM" --since "$load_start" --at "$load_end" \
    --instance app-1:8080 --strategy redlock --replicas 3 \
    || die "a dashboard query returned nothing from the compose stack's Prometheus"

  check_balancer

  say "docker-compose down, then up again on the same volumes: nothing kept may break the next demo"
  "${COMPOSE[@]}" down --timeout 20 >/dev/null 2>&1
  "${COMPOSE[@]}" up -d --no-build "${services[@]}" >/dev/null 2>&1
  wait_healthy 300 || die "the stack did not come back healthy after down/up"
  local kept=$TOKEN
  read_token
  [[ $TOKEN == "$kept" ]] || die "down/up without -v made a new admin token"
  run_loadgen "$OUT/again" compare "${REPLICA_URLS[@]}" \
    --strategies none,set-nx-px-token --stock 50 --users 50 --out /reports \
    || die "the loadgen job failed after down/up (report in $OUT/again)"
  lab judge-compare "$OUT/again" || die "after down/up the compare report breaks a promise"

  trap - EXIT
  take_down || die "docker-compose down -v left something of project $PROJECT behind"
  say "check-docker ($mode) passed in $((SECONDS - started)) s"
}

case "${1:-}" in
  images) ensure_docker; build_images ;;
  check) ensure_docker; build_images; check_stack full ;;
  ci) ensure_docker; build_prebuilt_images "${2:-target/debug}"; check_stack quick ;;
  *) echo "usage: $0 images|check|ci [BIN_DIR]" >&2; exit 2 ;;
esac
