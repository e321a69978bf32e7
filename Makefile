# seckill-lab — the commands a person types. Each target says what it does.
SHELL := /bin/bash
.PHONY: demo demo-stop test check fmt clippy build bench-locks

## Run the demo: local Redis + PostgreSQL, one replica, a burst of grabs per strategy.
demo:
	@scripts/demo.sh

## Stop what `make demo` started.
demo-stop:
	@scripts/demo.sh stop

## Run every test (installs/starts what the tests need).
test:
	@scripts/test.sh

## What CI checks besides the tests.
check: fmt clippy

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --all-targets --locked -- -D warnings

build:
	cargo build --workspace --locked

## Lock benchmarks: each figure beside the raw Redis floor of the same run.
bench-locks:
	@. scripts/services.sh && ensure_packages
	cargo run --release --locked -p seckill-bench --bin lock-bench
