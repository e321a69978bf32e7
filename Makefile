# seckill-lab — the commands a person types. Each target says what it does.
SHELL := /bin/bash
.PHONY: check-k8s docker-images check-docker doc import-graph check-lengths check-scripts check-docs fuzz-api cheatsheet check-cheatsheet demo demo-stop scenarios scenarios-table results debate atlas test check check-stack check-panels fmt clippy build bench bench-build bench-locks bench-audit

## Run the demo without Docker: own PostgreSQL, Redis, five Redlock nodes,
## three replicas, nginx, Prometheus (state in .demo/), then a short
## side-by-side comparison; prints the table and every URL to open
## (seckill-lab demo, lab/src/demo.rs).
demo:
	@scripts/demo.sh

## Stop exactly what `make demo` started (pid files under .demo/).
demo-stop:
	@scripts/demo.sh stop

## What the Docker paths install where missing (seckill-lab docker starts
## dockerd itself when none answers).
DOCKER_PACKAGES = docker:docker.io dockerd:docker.io docker-compose:docker-compose

## The three images from docker/Dockerfile (multi-stage: the release build
## runs inside Docker): seckill-lab/app:local, seckill-lab/loadgen:local,
## seckill-lab/lab:local. Where a base image cannot be pulled, a stand-in of
## the same tag is made first (docker/standins/make.sh).
docker-images:
	@. scripts/lib.sh && require_packages $(DOCKER_PACKAGES) && SECKILL_BIN_DIR=target/debug scripts/lab.sh docker images

## `docker-compose up` for real: the images above, the whole stack healthy,
## compare over the three replicas, Prometheus targets and dashboard
## queries, the balancer, then `down -v` leaving nothing of ours behind.
check-docker:
	@. scripts/lib.sh && require_packages $(DOCKER_PACKAGES) && SECKILL_BIN_DIR=target/debug scripts/lab.sh docker check

## Offline checks of the stack: docker-compose structure, promtool config/rules/tests,
## dashboard PromQL and Grafana schema (seckill-lab check-stack, lab/src/check_stack/;
## installs prometheus and docker-compose when missing).
check-stack:
	@. scripts/lib.sh && require_packages promtool:prometheus docker-compose:docker-compose && cargo run --quiet --locked -p seckill-lab -- check-stack

## The shell scripts parse (bash -n), pass shellcheck (installed where
## missing), share one library (no helper function written in two
## scripts) and pipe into no early-exiting reader (lab/src/scripts.rs).
## deploy/k8s/ without a cluster: rendered, schema-validated, held to the compose
## file (seckill-lab check-k8s, lab/src/check_stack/k8s.rs; docs/kubernetes.md)
check-k8s:
	@. scripts/lib.sh && require_packages kubectl:kubectl docker-compose:docker-compose && cargo run --quiet --locked -p seckill-lab -- check-k8s

check-scripts:
	@. scripts/lib.sh && require_packages shellcheck:shellcheck
	@cargo run --quiet --locked -p seckill-lab -- check-scripts

## docs/cheatsheet.md and docs/zh/cheatsheet.md each printed on one A4 page:
## HTML with print CSS, headless Chromium's --print-to-pdf into
## docs/{,zh/}cheatsheet.pdf (commit them), pdfinfo checks each is exactly one
## A4 page, pdftoppm draws their pictures under .state/cheatsheet/
## (seckill-lab cheatsheet, lab/src/cheatsheet.rs).
cheatsheet:
	@. scripts/lib.sh && require_packages pdfinfo:poppler-utils pdftoppm:poppler-utils /usr/bin/chromium:chromium deb:fonts-wqy-microhei:fonts-wqy-microhei
	@cargo run --quiet --locked -p seckill-lab -- cheatsheet

## The one-page check alone (CI): docs/ left untouched.
check-cheatsheet:
	@. scripts/lib.sh && require_packages pdfinfo:poppler-utils pdftoppm:poppler-utils /usr/bin/chromium:chromium deb:fonts-wqy-microhei:fonts-wqy-microhei
	@cargo run --quiet --locked -p seckill-lab -- cheatsheet --check

## schemathesis (PyPI, in .state/venv) against one live replica, driven by
## its GET /openapi.json: every operation (the event stream and PUT
## /admin/faults included), no 5xx, every answer matching the document. A
## fresh seed each run, printed first; FUZZ_SEED=<n> replays one.
fuzz-api:
	@. scripts/lib.sh && require_stack_packages && require_packages python3:python3 deb:python3-venv:python3-venv && scripts/lab.sh fuzz-api

## Every dashboard query against a live Prometheus after a short load
## (reuses a running demo; seckill-lab check-panels, lab/src/panels.rs).
check-panels:
	@. scripts/lib.sh && require_stack_packages with-prometheus && scripts/lab.sh check-panels

## Every fault scenario (release build, then about 6 minutes in our runs): each lock
## broken where it is weak, overlaps counted by the history arbiter, verdicts
## against each design's promise. One scenario: make scenarios S=gc-pause.
## Each run keeps its report: loadgen-report/scenarios/<names>/scenarios.{json,md,html}
## (<names>: S joined by +, or all). SECKILL_BIN_DIR=target/debug: no
## release build; SCENARIO_FLAGS=--quick: shorter fault windows; ARGS: more
## flags, e.g. ARGS="--strategies redlock --set where=after-check --sweep pause=0.5ttl,2ttl".
scenarios:
	@scripts/scenarios.sh

## Every scenario report kept so far in one table, the newest run of each
## case (the workshop's wrap-up): loadgen-report/scenarios/table.md.
scenarios-table:
	@"$${SECKILL_BIN_DIR:-target/release}/seckill-loadgen" scenario-table loadgen-report/scenarios

## Run the shell blocks of docs/workshop.md and the README's quick start
## against a small demo (debug binaries with SECKILL_BIN_DIR=target/debug,
## scenarios --quick); fails naming the block that failed. Skips, by an
## explicit list with reasons, what is checked elsewhere (lab/src/docs.rs).
check-docs:
	@cargo run --quiet --locked -p seckill-lab -- check-docs

## The figures the README and the workshop quote, from one dated run:
## the demo's comparison, the workshop's exercise 1 and every scenario,
## written to docs/results.md (release build, then about 10 minutes in our runs).
results:
	@cargo run --quiet --locked -p seckill-lab -- results

## The Redlock debate, judged against its sources (Kleppmann 2016,
## antirez's reply, the Redis docs): release build, then each claim's
## sweep (INJECTIONS=20 at every point) and the bisection of every flip,
## each row judged as its source states it and, apart, against our model;
## reports under loadgen-report/debate/; writes docs/redlock-debate.{md,json},
## docs/zh/redlock-debate.md and docs/redlock-debate/ (curves,
## counterexamples). One row: seckill-loadgen debate --rows ID --out DIR;
## make debate ROWS=id,id measures those rows into docs/, keeping the rest.
debate:
	@scripts/measure.sh debate

## The atlas: every strategy under every fault, each pair located along
## the fault's size for exclusion broken and data damaged, or why the
## fault cannot reach it (release build; INJECTIONS=10 at every probe);
## reports under loadgen-report/atlas/; writes docs/atlas.{md,json},
## docs/zh/atlas.md and docs/atlas/atlas.svg. make atlas CELLS=s:f,… measures
## those cells into docs/, keeping the rest; QUICK=1 the fixed sample;
## RECHECK=1 (with or without CELLS) runs both ends of every bracket in
## docs/atlas.json again and says whether each kept its side (exit 1 if not).
atlas:
	@scripts/measure.sh atlas

## Run every test (installs/starts what the tests need).
test:
	@scripts/test.sh

## What CI checks besides the tests.
check: fmt clippy doc

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets --locked -- -D warnings

## The API docs of every crate; a broken intra-doc link fails it.
doc:
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

build:
	cargo build --workspace --locked

## Service benchmarks: HTTP grabs/s beside pgbench running the same transaction,
## Redis locks beside pg-for-update, goose beside wrk, peak RSS at 1000 users.
bench:
	@scripts/bench.sh

## A clean release build of what `make demo` runs beside its floor: an
## empty crate with the same external dependencies, versions, features and
## profile, both built from clean in one run (about twice a clean build's
## time; lab/src/build_floor.rs). Prints ours / floor, then the demo's
## first table counted from the start of that build.
bench-build:
	@scripts/bench.sh build

## Lock benchmarks: each figure beside the raw Redis floor of the same run,
## etcd, ZooKeeper and MariaDB locks included (what consensus costs here).
## `make bench-locks SECTIONS="redlock rslock"` runs only those sections.
bench-locks:
	@. scripts/services.sh && ensure_packages && ensure_mariadb && ensure_node_redlock && \
	  SECKILL_TEST_MYSQL_URL=$$MYSQL_TEST_URL cargo run --release --locked -p seckill-bench --bin lock-bench $(SECTIONS)

## What one scrape costs at 1,000,000 orders (goal < 10 ms) beside the
## full recount it replaced and the HTTP / PostgreSQL round-trip floors.
bench-audit:
	@. scripts/services.sh && ensure_packages && ensure_postgres && \
	  cargo build --release --locked -p seckill-app -p seckill-bench && \
	  SECKILL_TEST_DATABASE_URL=$$PG_ADMIN_URL SECKILL_APP_BIN=target/release/seckill-app target/release/audit-bench

## The import graph of the service, the load generator and the benchmarks,
## module by module; fails on an import circle in any of them
## (seckill-lab import-graph, lab/src/imports.rs: the modules must stay layered).
import-graph:
	@cargo run --quiet --locked -p seckill-lab -- import-graph app/src load/src faults/src loadgen/src bench/src lab/src

## No non-test function of any crate over 80 lines unless its doc says
## why ("over 80 lines …"), parsed as the compiler does (lab/src/lengths.rs).
check-lengths:
	@cargo run --quiet --locked -p seckill-lab -- check-lengths app/src load/src faults/src loadgen/src bench/src lab/src wire/src launch/src testkit/src proxy/src
