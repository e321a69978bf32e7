//! A mutual-exclusion checker for the lock strategies, below HTTP.
//!
//! Many tasks acquire the same lock and record, on a shared timeline, when
//! they enter and leave the protected region; an *overlap* is an entry
//! while someone else is inside. Around each release the checker also
//! looks at the key: when it held *another* holder's value (with time to
//! live left) just before our release and is gone just after, our release
//! *freed another holder's lock*. And from the victim's side: a holder that
//! finds its key gone or replaced *before its TTL ran out* was robbed —
//! someone else's release freed it.
//!
//! The probes read the key whatever its type (a token lock's string, the
//! watchdog's hash); a probe that fails fails the test — an unreadable key
//! is not evidence of anything.

#![allow(dead_code)]

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use seckill_app::error::GrabError;
use seckill_app::faults::Faults;
use seckill_app::locking::{DistributedLock, Released};
use seckill_app::metrics::Metrics;
use seckill_app::redis_client::connection as redis_connection;
use seckill_app::strategy::{Deps, GrabContext};

/// Dependencies for lock-level runs. The pool is lazy: Redis locks never
/// touch it; `pg-lock-table` needs a real `database_url`.
pub fn deps(redis_url: &str, database_url: &str, ttl: Duration, wait: Duration) -> Arc<Deps> {
    Arc::new(Deps {
        pool: sqlx::postgres::PgPoolOptions::new()
            .max_connections(16)
            .connect_lazy(database_url)
            .expect("lazy pool"),
        redis: redis_connection(redis_url).expect("redis connection"),
        metrics: Metrics::new(),
        history: seckill_app::history::History::new(redis_url, "test".into(), Metrics::new())
            .expect("history handle"),
        redis_wait_replicas: 0,
        redis_wait_timeout: Duration::from_millis(250),
        lock_ttl: ttl,
        lock_wait: wait,
        lock_retry: Duration::from_millis(2),
        optimistic_max_retries: 10,
        freeze: seckill_app::freeze::FreezeHook::default(),
    })
}

pub fn no_faults() -> Faults {
    Faults::with_work_delay(0)
}

/// What a checker run saw.
#[derive(Debug, Default)]
pub struct Report {
    pub entries: u64,
    pub overlaps: u64,
    pub max_inside: i64,
    pub busy: u64,
    pub released: u64,
    pub not_owner: u64,
    pub freed_foreign: u64,
    pub robbed: u64,
}

impl Report {
    /// Any evidence that a release freed a lock that was not its own.
    pub fn freed_another(&self) -> u64 {
        self.freed_foreign + self.robbed
    }
}

#[derive(Debug, Default)]
struct Timeline {
    inside: AtomicI64,
    max_inside: AtomicI64,
    entries: AtomicU64,
    overlaps: AtomicU64,
    busy: AtomicU64,
    released: AtomicU64,
    not_owner: AtomicU64,
    freed_foreign: AtomicU64,
    robbed: AtomicU64,
}

/// Reads a lock key of any type: `{value, pttl}`, where value is the
/// string for a string key, our token when a hash key (the watchdog's)
/// holds our field and `hash:<field>` when it holds another's, nil when the
/// key is gone.
const PROBE: &str = r#"
local kind = redis.call("TYPE", KEYS[1]).ok
local value = false
if kind == "string" then
    value = redis.call("GET", KEYS[1])
elseif kind == "hash" then
    if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
        value = ARGV[1]
    else
        value = "hash:" .. (redis.call("HKEYS", KEYS[1])[1] or "")
    end
end
return {value, redis.call("PTTL", KEYS[1])}
"#;

async fn probe(
    conn: &mut redis::aio::ConnectionManager,
    key: &str,
    token: &str,
) -> (Option<String>, i64) {
    redis::Script::new(PROBE)
        .key(key)
        .arg(token)
        .invoke_async(conn)
        .await
        .unwrap_or_else(|e| panic!("probe of {key} failed: {e}"))
}

/// `tasks` tasks each take the lock of product 1 `rounds` times and stay
/// inside for `work`.
pub async fn run(
    lock: Arc<dyn DistributedLock>,
    deps: Arc<Deps>,
    faults: Faults,
    tasks: usize,
    rounds: usize,
    work: Duration,
) -> Report {
    run_mixed(vec![lock], deps, faults, tasks, rounds, work).await
}

/// Like [`run`], with task `i` using `locks[i % locks.len()]` — replicas
/// configured differently (e.g. clocks) — on one shared timeline, so an
/// overlap between a task of one and a task of another counts.
pub async fn run_mixed(
    locks: Vec<Arc<dyn DistributedLock>>,
    deps: Arc<Deps>,
    faults: Faults,
    tasks: usize,
    rounds: usize,
    work: Duration,
) -> Report {
    let timeline = Arc::new(Timeline::default());
    let mut handles = Vec::new();
    for i in 0..tasks {
        let lock = locks[i % locks.len()].clone();
        let (deps, timeline) = (deps.clone(), timeline.clone());
        handles.push(tokio::spawn(async move {
            let mut probe_conn = deps.redis.clone();
            for _ in 0..rounds {
                let cx = GrabContext {
                    deps: &deps,
                    faults,
                    pause: false,
                };
                let guard = match lock.acquire(cx, 1).await {
                    Ok(guard) => guard,
                    Err(GrabError::Busy(_)) => {
                        timeline.busy.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    Err(e) => panic!("acquire failed: {e}"),
                };
                let acquired = tokio::time::Instant::now();
                let now_inside = timeline.inside.fetch_add(1, Ordering::SeqCst) + 1;
                timeline.entries.fetch_add(1, Ordering::SeqCst);
                timeline.max_inside.fetch_max(now_inside, Ordering::SeqCst);
                if now_inside > 1 {
                    timeline.overlaps.fetch_add(1, Ordering::SeqCst);
                }
                // A fixed wait is the point: the holder's work inside its
                // section lasts `work` (longer than the TTL, in some tests).
                tokio::time::sleep(work).await;
                timeline.inside.fetch_sub(1, Ordering::SeqCst);

                let key = guard.key.clone();
                let token = guard.token.clone();
                let (before, pttl) = probe(&mut probe_conn, &key, &token).await;
                let result = lock.release(cx, guard).await.expect("release");
                let (after, _) = probe(&mut probe_conn, &key, &token).await;
                let within_ttl = acquired.elapsed() + Duration::from_millis(10) < deps.lock_ttl;
                if within_ttl && before.as_deref() != Some(token.as_str()) {
                    timeline.robbed.fetch_add(1, Ordering::SeqCst);
                }
                if before.as_deref().is_some_and(|v| v != token) && pttl > 5 && after != before {
                    timeline.freed_foreign.fetch_add(1, Ordering::SeqCst);
                }
                match result {
                    Released::Released => timeline.released.fetch_add(1, Ordering::SeqCst),
                    Released::NotOwner => timeline.not_owner.fetch_add(1, Ordering::SeqCst),
                };
            }
        }));
    }
    for handle in handles {
        handle.await.expect("checker task");
    }
    Report {
        entries: timeline.entries.load(Ordering::SeqCst),
        overlaps: timeline.overlaps.load(Ordering::SeqCst),
        max_inside: timeline.max_inside.load(Ordering::SeqCst),
        busy: timeline.busy.load(Ordering::SeqCst),
        released: timeline.released.load(Ordering::SeqCst),
        not_owner: timeline.not_owner.load(Ordering::SeqCst),
        freed_foreign: timeline.freed_foreign.load(Ordering::SeqCst),
        robbed: timeline.robbed.load(Ordering::SeqCst),
    }
}
