//! Section `contended`: 50 tasks on one key, each holding the lock 2 ms,
//! through the watchdog's pub/sub wake-up against raw `SET NX PX` polling
//! every 1–5 ms (jittered), one after the other in the same run:
//! hand-overs per second, the p99 of the wait from asking to holding, and
//! failed attempts per success.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use seckill_app::lock::watchdog::Watchdog;
use seckill_app::locking::DistributedLock;
use seckill_app::strategy::Deps;
use tokio::time::Instant;

use crate::floor::{raw_del, raw_set_nx};
use crate::harness::{cx, deps};
use crate::stats::quantile;
use crate::table::{line, row, verdict};

const CONTENDED_TASKS: usize = 50;
const CONTENDED_HOLD: Duration = Duration::from_millis(2);
const CONTENDED_WINDOW: Duration = Duration::from_secs(5);

/// The contended rows: the watchdog, then polling, on the node at `url`.
pub async fn contended_rows(url: &str) {
    let lease = Duration::from_millis(300);
    let wd = Arc::new(Watchdog::new(url).expect("watchdog"));
    let contended_deps = Arc::new(deps(url, lease, Duration::from_secs(5)));
    let ours = contended_watchdog(wd.clone(), contended_deps.clone()).await;
    let floor = contended_polling(contended_deps).await;
    row(
        "50 tasks, one key, 2 ms held: watchdog vs polling",
        ours.per_sec,
        floor.per_sec,
        "ops/s",
        ">= 1.00",
        ours.per_sec >= floor.per_sec,
    );
    row(
        "  acquire-wait p99 (same run)",
        ours.wait_p99_ms,
        floor.wait_p99_ms,
        "ms",
        "<= 0.33",
        ours.wait_p99_ms <= floor.wait_p99_ms / 3.0,
    );
    line(
        "  failed attempts per success (same run)",
        &format!("{:.2}", ours.failed_per_success),
        &format!("{:.2}", floor.failed_per_success),
        "n",
        "-",
        "ours <= 1",
        verdict(ours.failed_per_success <= 1.0),
    );
}

/// What one side of the contended row measured: hand-overs per second,
/// the p99 of the time from asking to holding, failed attempts per success.
struct Contended {
    per_sec: f64,
    wait_p99_ms: f64,
    failed_per_success: f64,
}

impl Contended {
    /// The figures of one window: every task's waits (one per success) and
    /// the failed attempts counted over it; a p99 of no waits is NaN.
    fn of(waits: &[f64], failed: u64) -> Self {
        let successes = waits.len() as f64;
        Self {
            per_sec: successes / CONTENDED_WINDOW.as_secs_f64(),
            failed_per_success: failed as f64 / successes.max(1.0),
            wait_p99_ms: quantile(waits, 0.99).unwrap_or(f64::NAN),
        }
    }
}

/// `CONTENDED_TASKS` tasks, each `task(deadline)` — a loop until the
/// window's deadline that returns its waits in milliseconds, one per
/// success: all their waits, once all have ended.
async fn waits_of_tasks<F, Fut>(task: F) -> Vec<f64>
where
    F: Fn(Instant) -> Fut,
    Fut: Future<Output = Vec<f64>> + Send + 'static,
{
    let deadline = Instant::now() + CONTENDED_WINDOW;
    let all: Vec<_> = (0..CONTENDED_TASKS)
        .map(|_| tokio::spawn(task(deadline)))
        .collect();
    let mut waits = Vec::new();
    for t in futures::future::join_all(all).await {
        waits.extend(t.expect("task"));
    }
    waits
}

/// 50 tasks on one key through the watchdog (pub/sub wake-up), each
/// holding the lock 2 ms; failed attempts are the watchdog's own retry
/// counter (`seckill_lock_retries_total`).
async fn contended_watchdog(wd: Arc<Watchdog>, d: Arc<Deps>) -> Contended {
    let retries = d.metrics.lock_retries.with_label_values(&["watchdog"]);
    let before = retries.get();
    let waits = waits_of_tasks(|deadline| {
        let (wd, d) = (wd.clone(), d.clone());
        async move {
            let mut waits = Vec::new();
            while Instant::now() < deadline {
                let asked = Instant::now();
                if let Ok(g) = wd.acquire(cx(&d), 7).await {
                    waits.push(asked.elapsed().as_secs_f64() * 1e3);
                    tokio::time::sleep(CONTENDED_HOLD).await;
                    wd.release(cx(&d), g).await.expect("release");
                }
            }
            waits
        }
    })
    .await;
    Contended::of(&waits, retries.get() - before)
}

/// The same 50 tasks and 2 ms hold with raw `SET NX PX` + `DEL`, a failed
/// `SET` retried after a jittered 1–5 ms sleep: the polling floor.
async fn contended_polling(d: Arc<Deps>) -> Contended {
    let failed = Arc::new(AtomicU64::new(0));
    let waits = waits_of_tasks(|deadline| {
        let (mut conn, failed) = (d.redis.clone(), failed.clone());
        async move {
            let mut waits = Vec::new();
            'outer: while Instant::now() < deadline {
                let asked = Instant::now();
                loop {
                    if raw_set_nx(&mut conn, "raw:polled").await {
                        break;
                    }
                    failed.fetch_add(1, Ordering::Relaxed);
                    if Instant::now() >= deadline {
                        break 'outer;
                    }
                    let jitter = rand::rng().random_range(1_000..=5_000);
                    tokio::time::sleep(Duration::from_micros(jitter)).await;
                }
                waits.push(asked.elapsed().as_secs_f64() * 1e3);
                tokio::time::sleep(CONTENDED_HOLD).await;
                raw_del(&mut conn, "raw:polled").await;
            }
            waits
        }
    })
    .await;
    Contended::of(&waits, failed.load(Ordering::Relaxed))
}
