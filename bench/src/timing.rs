//! The timing loops of both binaries: sequential runs timed one by one
//! ([`each_ms`], audit-bench's requests) or in batches ([`per_op_us`],
//! lock-bench's cycles), and tasks counting what they finish by a deadline
//! ([`per_second`]). Monotonic time only (`tokio::time::Instant`).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::stats::quantile;

/// `n` sequential runs of `op`, each timed on its own: their durations in
/// milliseconds, in the order they ran.
pub async fn each_ms<F, Fut>(n: usize, mut op: F) -> Vec<f64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        op().await;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    ms
}

/// Median of `rounds` batches of `n` sequential runs of `op`, in µs per op
/// (NaN for no rounds).
pub async fn per_op_us<F, Fut>(rounds: usize, n: usize, mut op: F) -> f64
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut batches = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        for i in 0..n {
            op(i).await;
        }
        batches.push(started.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    quantile(&batches, 0.5).unwrap_or(f64::NAN)
}

/// `tasks` tasks, task `t` running `task(t, deadline)` — a loop until the
/// deadline `window` from now that returns how many operations it
/// completed: the operations per second of all of them.
pub async fn per_second<F, Fut>(tasks: usize, window: Duration, task: F) -> f64
where
    F: Fn(usize, Instant) -> Fut,
    Fut: Future<Output = u64> + Send + 'static,
{
    let deadline = Instant::now() + window;
    let all: Vec<_> = (0..tasks)
        .map(|t| tokio::spawn(task(t, deadline)))
        .collect();
    let mut done = 0;
    for ops in futures::future::join_all(all).await {
        done += ops.expect("task");
    }
    done as f64 / window.as_secs_f64()
}
