//! Section `many`: the token lock on many keys, 50 tasks over 10,000
//! products for 3 s, beside `redis-benchmark` sending the bare `SET NX PX`
//! with 50 clients over 10,000 keys to the same node.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use seckill_app::lock::set_nx_px_token::SetNxPxToken;

use crate::harness::{cycles_per_second, deps, Products};
use crate::table::row;

/// Many keys, 50 tasks: lock ops/s vs redis-benchmark SET NX PX -c 50 on
/// the node at `url`, listening on `port`.
pub async fn many_keys_row(url: &str, port: u16) {
    let (ttl, window) = (Duration::from_secs(10), Duration::from_secs(3));
    let many = Arc::new(SetNxPxToken::new());
    let many_deps = Arc::new(deps(url, ttl, Duration::from_secs(5)));
    let lock_ops = cycles_per_second(
        many,
        many_deps,
        50,
        window,
        Products::Shares {
            first: 1_000_000,
            count: 10_000,
        },
    )
    .await;
    let floor = redis_benchmark_set_nx(port);
    row(
        "lock ops/s (acquire+release), 50 tasks, 10k keys",
        lock_ops,
        floor,
        "ops/s",
        ">= 0.50",
        lock_ops / floor >= 0.5,
    );
}

/// `redis-benchmark -c 50 -n 200000 -r 10000` sending `SET key v NX PX
/// 10000` to the node on `port`: its requests per second (NaN when its
/// output has no figure).
fn redis_benchmark_set_nx(port: u16) -> f64 {
    let bench = Command::new("redis-benchmark")
        .args([
            "-p",
            &port.to_string(),
            "-c",
            "50",
            "-n",
            "200000",
            "-r",
            "10000",
            "-q",
        ])
        .args(["SET", "bench:__rand_int__", "v", "NX", "PX", "10000"])
        .output()
        .expect("redis-benchmark on PATH");
    let text = String::from_utf8_lossy(&bench.stdout);
    text.split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1].starts_with("requests"))
        .and_then(|w| w[0].parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}
