# syntax=docker/dockerfile:1
#
# seckill-loadgen (goose): multi-stage build like docker/app.Dockerfile.
# A one-shot job, so no health check. Reports go to /reports.
#
#   docker build -f docker/loadgen.Dockerfile -t seckill-lab/loadgen .
#   docker-compose --profile load run --rm loadgen compare --help

ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_TERM_COLOR=never

# 1. Dependency layer from manifests and stub sources.
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
 && cargo build --release --locked -p seckill-loadgen \
 && rm -rf loadgen/src target/release/seckill-loadgen* target/release/deps/seckill_loadgen-* \
           target/release/.fingerprint/seckill-loadgen-*

# 2. The load generator itself (touch: see docker/app.Dockerfile).
COPY loadgen loadgen
RUN touch loadgen/src/main.rs \
 && cargo build --release --locked -p seckill-loadgen --bin seckill-loadgen \
 && install -Dm0755 target/release/seckill-loadgen /out/seckill-loadgen

FROM ${RUNTIME_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 seckill \
 && useradd --system --uid 10001 --gid seckill --no-create-home \
            --home-dir /nonexistent --shell /usr/sbin/nologin seckill \
 && install -d -o seckill -g seckill /reports
COPY --from=builder /out/seckill-loadgen /usr/local/bin/seckill-loadgen
WORKDIR /reports
USER 10001:10001
VOLUME ["/reports"]
ENTRYPOINT ["/usr/local/bin/seckill-loadgen"]
CMD ["--help"]
