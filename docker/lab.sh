#!/usr/bin/env bash
# Entry of the seckill-lab/lab:local image: the whole lab for people who
# have only Docker. See `docker run --rm seckill-lab/lab:local --help`.
set -euo pipefail
ROOT=/opt/seckill-lab
cd "$ROOT"

usage() {
  cat <<'HELP'
seckill-lab/lab:local — the whole seckill lab in one container: the service,
the load generator, and the servers they use (PostgreSQL, Redis and five
Redlock nodes, etcd, ZooKeeper, MariaDB, nginx, Prometheus), all inside.

  docker run --rm -p 127.0.0.1:8080:8080 -p 127.0.0.1:8089:8089 -p 127.0.0.1:9090:9090 seckill-lab/lab:local demo
      `make demo` inside the container: three replicas behind nginx, a
      side-by-side flash sale over thirteen strategies, its results table.
      Then the stack stays up until Ctrl-C:
        http://127.0.0.1:8080/          live status page (through nginx)
        http://127.0.0.1:9090/classic/  Prometheus, alert rules loaded
      Knobs (-e NAME=value): DEMO_STRATEGIES (comma list), DEMO_STOCK (100),
      DEMO_USERS (50), DEMO_WORK_DELAY_MS (5), SECKILL_ADMIN_TOKEN (default:
      one made for the stack, printed once).

  docker run --rm -v "$PWD/out:/out" seckill-lab/lab:local scenario all
  docker run --rm -v "$PWD/out:/out" seckill-lab/lab:local scenario gc-pause --strategies watchdog,fenced
      The fault scenarios (SIGSTOP of a replica, a Redlock node's clock
      jump, restarts without persistence, delayed and cut links through a
      proxy, ...): every argument goes to `seckill-loadgen scenario`.
      Reports: /out/scenarios.{json,md,html} (mount a folder there).

  docker run --rm seckill-lab/lab:local scenario --list
  docker run --rm seckill-lab/lab:local loadgen ARGS...   seckill-loadgen itself
  docker run --rm seckill-lab/lab:local --help            this text

Ctrl-C (or docker stop) stops every process of the lab and exits.
HELP
}

child=""
stop_everything() {
  trap - INT TERM
  echo
  echo "[lab] stopping"
  if [[ -n "$child" ]]; then kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  cleanup
  exit 130
}
cleanup() { :; }

# own_out: reports written as root belong to whoever owns the mounted /out.
own_out() {
  [[ -d /out ]] || return 0
  chown -R --reference=/out /out 2>/dev/null || true
}

# run_child <command...>: in its own process group, so Ctrl-C reaches it and
# everything it started; waits for it and returns its status.
run_child() {
  setsid "$@" &
  child=$!
  local status=0
  wait "$child" || status=$?
  child=""
  return $status
}

trap stop_everything INT TERM

case "${1:---help}" in
  -h|--help|help)
    usage ;;

  demo)
    shift
    export STACK_DIR="$ROOT/.demo" STACK_BIND=0.0.0.0
    mkdir -p "$STACK_DIR"
    # The ports the container publishes: the balancer, the console and Prometheus.
    echo 8080 > "$STACK_DIR/lb.port"
    echo 9090 > "$STACK_DIR/prometheus.port"
    echo 8089 > "$STACK_DIR/console.port"
    # A token of this stack's own unless one is given: the demo's documented
    # token is for `make demo` on loopback, not a container others may reach.
    if [[ -z ${SECKILL_ADMIN_TOKEN:-} ]]; then
      SECKILL_ADMIN_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
      export SECKILL_ADMIN_TOKEN
      echo "[lab] this stack's admin token (made for it; -e SECKILL_ADMIN_TOKEN=… sets one): $SECKILL_ADMIN_TOKEN"
    fi
    cleanup() { scripts/demo.sh stop >/dev/null 2>&1 || true; }
    status=0
    run_child scripts/demo.sh up || status=$?
    if [[ $status -ge 2 ]]; then cleanup; exit "$status"; fi
    cat <<'URLS'

[lab] From the host (published with -p 127.0.0.1:8080:8080 -p 127.0.0.1:8089:8089 -p 127.0.0.1:9090:9090):
        http://127.0.0.1:8080/            live status page, through nginx over the three replicas
        http://127.0.0.1:8089/            the console: strategy, paced load, faults, who holds the lock
                                          (it asks for this stack's admin token, printed above)
        http://127.0.0.1:9090/classic/    Prometheus (alerts, graphs)
      The replicas' own ports above are inside the container.
[lab] The stack stays up: Ctrl-C (or docker stop) stops it.
URLS
    sleep infinity &
    child=$!
    wait "$child" || true ;;

  scenario)
    shift
    if [[ " $* " == *" --list "* || " $* " == *" --help "* || " $* " == *" -h "* ]]; then exec seckill-loadgen scenario "$@"; fi
    . scripts/services.sh
    export SECKILL_ROOT="$ROOT"
    ensure_postgres
    ensure_mariadb
    cleanup() { own_out; }
    args=("$@")
    if [[ " $* " != *" --out "* ]]; then args+=(--out /out); fi
    mkdir -p /out
    status=0
    run_child seckill-loadgen scenario "${args[@]}" \
      --app-bin "$ROOT/bin/seckill-app" --database-url "$PG_ADMIN_URL" --mysql-url "$MYSQL_TEST_URL" || status=$?
    own_out
    exit "$status" ;;

  loadgen)
    shift
    exec seckill-loadgen "$@" ;;

  *)
    echo "unknown command: $1" >&2
    usage >&2
    exit 2 ;;
esac
