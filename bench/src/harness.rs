//! A lock outside the service: the [`Deps`] and [`GrabContext`] a
//! [`DistributedLock`] is called with (no PostgreSQL behind the pool: no
//! lock here touches it), and the two ways lock-bench drives any lock —
//! sequential uncontended cycles ([`cycle_us`]), and tasks cycling for a
//! while, taking turns on one key or each on keys of its own
//! ([`cycles_per_second`]).

use std::sync::Arc;
use std::time::Duration;

use seckill_app::faults::Faults;
use seckill_app::history::History;
use seckill_app::locking::DistributedLock;
use seckill_app::metrics::Metrics;
use seckill_app::redis_client::connection as redis_connection;
use seckill_app::strategy::{Deps, GrabContext};
use tokio::time::Instant;

use crate::timing::{per_op_us, per_second};

/// How long every Redlock here gives each node to answer.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(50);

/// What a lock is called with: Redis at `redis_url`, a lease of `ttl`,
/// waiting at most `wait` (retrying every 2 ms), fresh metrics.
pub fn deps(redis_url: &str, ttl: Duration, wait: Duration) -> Deps {
    Deps {
        pool: sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://unused@127.0.0.1:1/unused")
            .expect("lazy pool"),
        redis: redis_connection(redis_url).expect("redis"),
        metrics: Metrics::new(),
        history: History::new(redis_url, "test".into(), Metrics::new()).expect("history handle"),
        redis_wait_replicas: 0,
        redis_wait_timeout: Duration::from_millis(250),
        lock_ttl: ttl,
        lock_wait: wait,
        lock_retry: Duration::from_millis(2),
        optimistic_max_retries: 0,
        freeze: seckill_app::freeze::FreezeHook::default(),
    }
}

/// A grab's context on `deps`, with no workshop fault.
pub fn cx(deps: &Deps) -> GrabContext<'_> {
    GrabContext {
        deps,
        faults: Faults::with_work_delay(0),
        pause: false,
    }
}

/// Sequential acquire+release cycles of one uncontended lock (product 7):
/// the median over `rounds` rounds of `n` cycles, µs each.
pub async fn cycle_us(lock: &dyn DistributedLock, d: &Deps, rounds: usize, n: usize) -> f64 {
    per_op_us(rounds, n, |_| async {
        let g = lock.acquire(cx(d), 7).await.expect("acquire");
        lock.release(cx(d), g).await.expect("release");
    })
    .await
}

/// The products the tasks of [`cycles_per_second`] lock.
#[derive(Debug, Clone, Copy)]
pub enum Products {
    /// All tasks on this one product, taking turns: a task whose wait ran
    /// out has lost a turn, not failed.
    One(i64),
    /// Task `t` on `first + t`, then `tasks` products further on, round
    /// `first..first + count`: no task waits for another, so a failed
    /// acquire is a fault and stops the bench.
    Shares { first: i64, count: i64 },
}

/// `tasks` tasks cycling acquire+release on `products` for `window`:
/// completed cycles (on one product, hand-overs) per second.
pub async fn cycles_per_second(
    lock: Arc<dyn DistributedLock>,
    d: Arc<Deps>,
    tasks: usize,
    window: Duration,
    products: Products,
) -> f64 {
    let (first, count) = match products {
        Products::One(product) => (product, 1),
        Products::Shares { first, count } => (first, count),
    };
    per_second(tasks, window, |t, deadline| {
        let (lock, d) = (lock.clone(), d.clone());
        async move {
            let (mut i, mut done) = (t as i64, 0);
            while Instant::now() < deadline {
                let c = cx(&d);
                match lock.acquire(c, first + i % count).await {
                    Ok(g) => {
                        lock.release(c, g).await.expect("release");
                        done += 1;
                    }
                    Err(_) if matches!(products, Products::One(_)) => {}
                    Err(e) => panic!("acquire: {e:?}"),
                }
                i += tasks as i64;
            }
            done
        }
    })
    .await
}
