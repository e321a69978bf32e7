# syntax=docker/dockerfile:1
#
# seckill-app: multi-stage build.
#   builder  rust:1-bookworm; dependencies are compiled in their own layer
#            from the manifests and stub sources, so editing the service's
#            code only recompiles the service.
#   runtime  debian:bookworm-slim, non-root user, curl for the health check.
#
# Build from the repository root (docker-compose.yml does this):
#   docker build -f docker/app.Dockerfile -t seckill-lab/app .
#
# Migrations (migrations/*.sql) are embedded in the binary by sqlx::migrate!
# and applied at start; see docker-compose.yml.

ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
# Smaller, faster release builds for the image; the workspace keeps
# `debug = 1` for local profiling.
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_TERM_COLOR=never

# 1. Dependency layer: workspace manifests, lock file and stub sources for
#    every member (cargo needs all of them to resolve the workspace).
COPY Cargo.toml Cargo.lock ./
COPY app/Cargo.toml app/Cargo.toml
COPY loadgen/Cargo.toml loadgen/Cargo.toml
COPY bench/Cargo.toml bench/Cargo.toml
COPY testkit/Cargo.toml testkit/Cargo.toml
RUN for crate in app loadgen bench testkit; do mkdir -p "$crate/src"; done \
 && echo 'fn main() {}' > app/src/main.rs && : > app/src/lib.rs \
 && echo 'fn main() {}' > loadgen/src/main.rs \
 && echo 'fn main() {}' > bench/src/main.rs \
 && : > testkit/src/lib.rs \
 && cargo build --release --locked -p seckill-app \
 && rm -rf app/src target/release/seckill-app* target/release/deps/seckill_app-* \
           target/release/deps/libseckill_app-* target/release/.fingerprint/seckill-app-*

# 2. The service itself. `touch` makes sure cargo sees the real sources as
#    newer than the stub build, whatever mtimes COPY preserved.
COPY migrations migrations
COPY app app
RUN touch app/src/main.rs app/src/lib.rs \
 && cargo build --release --locked -p seckill-app --bin seckill-app \
 && install -Dm0755 target/release/seckill-app /out/seckill-app

FROM ${RUNTIME_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 seckill \
 && useradd --system --uid 10001 --gid seckill --no-create-home \
            --home-dir /nonexistent --shell /usr/sbin/nologin seckill
COPY --from=builder /out/seckill-app /usr/local/bin/seckill-app
WORKDIR /srv/seckill
USER 10001:10001
# Inside a container the service must listen on every interface; with a
# non-loopback listener the admin API needs SECKILL_ADMIN_TOKEN.
ENV SECKILL_LISTEN=0.0.0.0:8080 \
    SECKILL_LOG_FORMAT=json
EXPOSE 8080
# Ready = PostgreSQL and Redis answer (GET /health/ready). The port must
# match SECKILL_LISTEN.
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=6 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/health/ready || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/seckill-app"]
