//! Section `token`, always run first: the token lock (`set-nx-px-token`)
//! against the two raw commands it is made of, on the same client, in
//! alternating rounds. Its floor (raw `SET NX PX` + `DEL`, µs per pair)
//! is the floor of the consensus table too.

use std::time::Duration;

use seckill_app::lock::set_nx_px_token::SetNxPxToken;
use seckill_app::locking::DistributedLock;

use crate::floor::raw_cycle_us;
use crate::harness::{cx, deps};
use crate::stats::quantile;
use crate::table::row;
use crate::timing::per_op_us;

/// Prints the token row; returns the floor (raw `SET NX PX` + `DEL`, µs
/// per pair).
pub async fn token_row(url: &str) -> f64 {
    let d = deps(url, Duration::from_secs(10), Duration::from_secs(5));
    let c = cx(&d);
    let token = SetNxPxToken::new();
    let (rounds, n) = (7, 2_000);
    let mut ours_runs = Vec::new();
    let mut raw_runs = Vec::new();
    for _ in 0..rounds {
        ours_runs.push(
            per_op_us(1, n, |_| async {
                let g = token.acquire(c, 1).await.expect("acquire");
                token.release(c, g).await.expect("release");
            })
            .await,
        );
        raw_runs.push(raw_cycle_us(&d.redis, n).await);
    }
    let median = |runs: &[f64]| quantile(runs, 0.5).unwrap_or(f64::NAN);
    let (ours, floor) = (median(&ours_runs), median(&raw_runs));
    row(
        "set-nx-px-token acquire+release vs SET+DEL",
        ours,
        floor,
        "µs/op",
        "<= 1.25",
        ours / floor <= 1.25,
    );
    floor
}
