//! Section `watchdog`: the watchdog lock's renewals per lease period
//! (info), and how soon a waiter holds the lock after a release — woken by
//! the published message in another process, and at the release in the
//! holder's own — beside the same hand-over in raw pub/sub commands.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use redis::aio::ConnectionManager;
use seckill_app::lock::watchdog::Watchdog;
use seckill_app::locking::DistributedLock;
use seckill_app::strategy::Deps;
use tokio::time::Instant;

use crate::floor::{raw_del, raw_set_nx};
use crate::harness::{cx, deps};
use crate::stats::quantile;
use crate::table::{line, ratio_rows, Goal};

/// Wake-up trials of each wake-up figure.
const WAKE_TRIALS: usize = 30;

/// The watchdog: renewals per lease period, and waking a waiter.
pub async fn watchdog_rows(url: &str) {
    let lease = Duration::from_millis(300);
    let wd_deps = deps(url, lease, Duration::from_secs(5));
    let wd = Arc::new(Watchdog::new(url).expect("watchdog"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let g = wd.acquire(cx(&wd_deps), 3).await.expect("acquire");
    tokio::time::sleep(lease * 10).await;
    wd.release(cx(&wd_deps), g).await.expect("release");
    let renewals = wd_deps
        .metrics
        .lock_renewals
        .with_label_values(&["watchdog", "renewed"])
        .get() as f64;
    let per_lease = renewals / 10.0;
    // No raw Redis counterpart: the schedule (every lease/3) is the
    // design, asserted by the tests; printed here without a verdict.
    line(
        "watchdog renewals per lease period (info)",
        &format!("{per_lease:.2}"),
        "-",
        "n",
        "-",
        "every ⅓",
        "",
    );

    // The wake-up: a waiter blocked on a held lock, the holder releases;
    // from the release call to the waiter holding the lock. The goal row's
    // waiter is another process's (another Watchdog: its own listener),
    // woken by the published message; the floor is the same hand-over in
    // raw commands on the same node (see `raw_wake_ms`). The info row's
    // waiter shares the holder's process, woken at the release.
    let wake_deps = Arc::new(deps(url, Duration::from_secs(10), Duration::from_secs(5)));
    let replica = Arc::new(Watchdog::new(url).expect("watchdog"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let across = wake_up_ms(&wd, &replica, &wake_deps, 100).await;
    let within = wake_up_ms(&wd, &wd, &wake_deps, 200).await;
    let raw_ms = raw_wake_ms(url, &wake_deps.redis).await;
    #[rustfmt::skip]
    ratio_rows(&[
        ("watchdog wake-up after release vs raw pub/sub", across, raw_ms, 2, "ms", across / raw_ms, Goal::AtMost(2.0)),
        ("  waiter in the holder's process (info)", within, raw_ms, 2, "ms", within / raw_ms, Goal::Info),
    ]);
}

/// How long a holder keeps the lock before releasing in wake-up trial
/// `trial`: 60–109 ms, so the waiter is surely blocked, varied so trials
/// do not fall into step with a timer.
fn wake_pause(trial: usize) -> Duration {
    Duration::from_millis(60 + (trial as u64 * 7) % 50)
}

/// Median ms from `holder`'s release to `waiter`'s acquire over the wake
/// trials, on products `first..`.
async fn wake_up_ms(
    holder: &Arc<Watchdog>,
    waiter: &Arc<Watchdog>,
    d: &Arc<Deps>,
    first: i64,
) -> f64 {
    let mut delays = Vec::new();
    for trial in 0..WAKE_TRIALS {
        let product = first + trial as i64;
        let held = holder.acquire(cx(d), product).await.expect("holder");
        let (waiter, d2) = (waiter.clone(), d.clone());
        let waiting = tokio::spawn(async move {
            let c = cx(&d2);
            let g = waiter.acquire(c, product).await.expect("waiter");
            let at = Instant::now();
            waiter.release(c, g).await.expect("release");
            at
        });
        tokio::time::sleep(wake_pause(trial)).await;
        let released = Instant::now();
        holder.release(cx(d), held).await.expect("release");
        let woke = waiting.await.expect("waiter");
        delays.push(woke.duration_since(released).as_secs_f64() * 1e3);
    }
    quantile(&delays, 0.5).unwrap_or(f64::NAN)
}

/// The raw floor of a pub/sub wake-up, in plain commands on one node: the
/// holder's key set, a subscriber waiting on a channel; the holder sends
/// `DEL` + `PUBLISH` in one round trip (MULTI), the subscriber receives the
/// message and takes the key with `SET NX PX`. Median ms from the release
/// call to the `SET`'s answer, over the same trials as the watchdog's.
async fn raw_wake_ms(url: &str, conn: &ConnectionManager) -> f64 {
    const KEY: &str = "raw:wake";
    let client = redis::Client::open(url).expect("client");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    pubsub.subscribe(KEY).await.expect("subscribe");
    let (woke_tx, mut woke) = tokio::sync::mpsc::unbounded_channel();
    let mut taker = conn.clone();
    let waiter = tokio::spawn(async move {
        let mut messages = pubsub.into_on_message();
        while messages.next().await.is_some() {
            let took = raw_set_nx(&mut taker, KEY).await;
            if woke_tx.send((Instant::now(), took)).is_err() {
                break;
            }
        }
    });
    let mut holder = conn.clone();
    let mut delays = Vec::new();
    for trial in 0..WAKE_TRIALS {
        assert!(raw_set_nx(&mut holder, KEY).await, "the raw key is free");
        tokio::time::sleep(wake_pause(trial)).await;
        let released = Instant::now();
        let _: (i64, i64) = redis::pipe()
            .atomic()
            .del(KEY)
            .publish(KEY, 1)
            .query_async(&mut holder)
            .await
            .expect("DEL + PUBLISH");
        let (at, took) = woke.recv().await.expect("the subscriber woke");
        assert!(took, "the woken subscriber took the key");
        delays.push(at.duration_since(released).as_secs_f64() * 1e3);
        raw_del(&mut holder, KEY).await;
    }
    waiter.abort();
    quantile(&delays, 0.5).unwrap_or(f64::NAN)
}
