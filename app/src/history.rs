//! The mutual-exclusion history: every critical section reports its entry
//! and its exit to one arbiter shared by all replicas, so two holders at
//! once — on one replica or across several — are *counted*, not inferred
//! from the audit.
//!
//! The arbiter is a Redis server of its own (`SECKILL_HISTORY_URL`; by
//! default the service's Redis), never one the scenarios break: the scenario
//! runner starts a dedicated `redis-server` for it. Each entry and exit is
//! one Lua script (`history_enter.lua`, `history_exit.lua`) stamped with
//! the arbiter's own clock (`TIME`), so replicas whose clocks disagree still
//! agree on the order of events.
//!
//! **Where a section begins and ends.** For a lock around the section
//! (`grab_with_lock`): it begins once the lock is granted, before the stock
//! is read, and ends after the commit (or the rollback) — *before* the
//! release, so a correct lock can never show a false overlap: the exit is
//! recorded before the next holder can be granted. With the
//! `unlock_before_commit` fault the release comes first, so the commit
//! after it is (correctly) inside. For a lock inside the transaction
//! (`pg-for-update`, `pg-advisory`) the section begins when the row or
//! advisory lock is granted and ends just before the commit that releases
//! it. Strategies that are not locks (`pg-optimistic`, `pg-atomic`,
//! `redis-lua-stock`) have no section and record nothing.
//!
//! **Overlap** = a section that began while another section of the same
//! product was inside. **max_holders** = the most sections inside at once.
//! A replica killed inside a section never reports its exit: whoever killed
//! it calls `POST /admin/history/forget` with its instance id.
//!
//! **Switched on per run** (`PUT /admin/history {"enabled": true}` starts a
//! new run id on the arbiter; every replica follows within
//! `SECKILL_CONTROL_REFRESH_MS`). Off, it costs one relaxed atomic load per
//! grab; on, two arbiter round trips inside the critical section (measured
//! in the README). An arbiter that cannot be reached is counted
//! (`seckill_history_errors_total`, and `errors` in `GET /admin/history`)
//! so an incomplete history never passes for a clean one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::Script;

use crate::error::GrabError;
use crate::metrics::Metrics;

/// Arbiter key holding the current run id (absent: history off).
pub const RUN_KEY: &str = "seckill:history:run";
/// How long a run's keys stay on the arbiter.
const RUN_KEYS_TTL: Duration = Duration::from_secs(24 * 3600);

/// `history_enter.lua`: a section begins (counts, overlaps, first events).
static ENTER_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("history_enter.lua")));

/// `history_exit.lua`: a section ends.
static EXIT_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("history_exit.lua")));

/// `history_forget.lua`: drop the sections a dead replica left inside.
static FORGET_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("history_forget.lua")));

/// One replica's handle on the arbiter.
#[derive(Debug, Clone)]
pub struct History {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: ConnectionManager,
    instance: String,
    run: RwLock<Option<String>>,
    seq: AtomicU64,
    errors: AtomicU64,
    metrics: Metrics,
}

/// A section that is inside, to be reported out by [`History::exit`].
#[derive(Debug)]
pub struct Entered {
    run: String,
    product: i64,
    member: String,
}

/// What `GET /admin/history` answers: wire types, shared with the load
/// generator.
pub use seckill_wire::history::{HistoryReport, Inside, OverlapEvent, StrategyHistory};

fn keys(run: &str) -> (String, String, String) {
    (
        format!("seckill:history:{run}:stats"),
        format!("seckill:history:{run}:first"),
        format!("seckill:history:{run}:products"),
    )
}

fn inside_key(run: &str, product: i64) -> String {
    format!("seckill:history:{run}:inside:{product}")
}

impl History {
    /// A handle on the arbiter at `url`, for replica `instance`.
    pub fn new(url: &str, instance: String, metrics: Metrics) -> anyhow::Result<Self> {
        let conn = crate::redis_client::connection(url)?;
        Ok(Self {
            inner: Arc::new(Inner {
                conn,
                instance,
                run: RwLock::new(None),
                seq: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                metrics,
            }),
        })
    }

    /// This replica's instance id.
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    fn run(&self) -> Option<String> {
        self.inner
            .run
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_run(&self, run: Option<String>) {
        *self
            .inner
            .run
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = run;
    }

    fn failed(&self, what: &str, error: &redis::RedisError) {
        let n = self.inner.errors.fetch_add(1, Ordering::Relaxed);
        self.inner.metrics.history_errors.inc();
        if n == 0 || n.is_power_of_two() {
            tracing::warn!(error = %error, "history: {what} not recorded (arbiter unreachable; counted in errors)");
        }
    }

    /// Record the start of a section, when a run is on.
    pub async fn enter(&self, strategy: &str, product: i64) -> Option<Entered> {
        let run = self.run()?;
        let n = self.inner.seq.fetch_add(1, Ordering::Relaxed);
        let member = format!("{}:{n}", self.inner.instance);
        let (stats, first, products) = keys(&run);
        let mut conn = self.inner.conn.clone();
        let result: Result<i64, _> = ENTER_SCRIPT
            .key(inside_key(&run, product))
            .key(stats)
            .key(first)
            .key(products)
            .arg(&member)
            .arg(strategy)
            .arg(product)
            .arg(RUN_KEYS_TTL.as_secs())
            .invoke_async(&mut conn)
            .await;
        match result {
            Ok(_) => Some(Entered {
                run,
                product,
                member,
            }),
            Err(e) => {
                self.failed("a section's entry", &e);
                None
            }
        }
    }

    /// Record the end of a section.
    pub async fn exit(&self, entered: Option<Entered>) {
        let Some(entered) = entered else { return };
        let mut conn = self.inner.conn.clone();
        let result: Result<i64, _> = EXIT_SCRIPT
            .key(inside_key(&entered.run, entered.product))
            .arg(&entered.member)
            .invoke_async(&mut conn)
            .await;
        if let Err(e) = result {
            self.failed("a section's exit", &e);
        }
    }

    /// Start a new run (history on) or stop recording; every replica
    /// follows at its next refresh.
    pub async fn switch(&self, enabled: bool) -> Result<Option<String>, GrabError> {
        let mut conn = self.inner.conn.clone();
        let run = if enabled {
            // A fresh run id, shaped like a lock token.
            let run = uuid::Uuid::new_v4().simple().to_string();
            redis::cmd("SET")
                .arg(RUN_KEY)
                .arg(&run)
                .query_async::<()>(&mut conn)
                .await?;
            Some(run)
        } else {
            redis::cmd("DEL")
                .arg(RUN_KEY)
                .query_async::<()>(&mut conn)
                .await?;
            None
        };
        self.set_run(run.clone());
        Ok(run)
    }

    /// Re-read the run id from the arbiter.
    pub async fn refresh(&self) -> Result<(), GrabError> {
        let mut conn = self.inner.conn.clone();
        let run: Option<String> = redis::cmd("GET")
            .arg(RUN_KEY)
            .query_async(&mut conn)
            .await?;
        self.set_run(run);
        Ok(())
    }

    /// Refresh every `interval` until `stop` fires.
    pub async fn refresh_loop(self, interval: Duration, stop: tokio::sync::watch::Receiver<bool>) {
        crate::redis_client::refresh_every("the history run id", interval, stop, move || {
            let history = self.clone();
            async move { history.refresh().await }
        })
        .await;
    }

    /// Drop the sections a dead replica left inside. Returns how many.
    pub async fn forget(&self, instance: &str) -> Result<u64, GrabError> {
        let Some(run) = self.run() else { return Ok(0) };
        let (_, _, products) = keys(&run);
        let mut conn = self.inner.conn.clone();
        let removed: u64 = FORGET_SCRIPT
            .key(products)
            .arg(format!("seckill:history:{run}:inside:"))
            .arg(format!("{instance}:"))
            .invoke_async(&mut conn)
            .await?;
        Ok(removed)
    }

    /// The current run's figures, read from the arbiter.
    pub async fn report(&self) -> Result<HistoryReport, GrabError> {
        let run = self.run();
        let mut report = HistoryReport {
            enabled: run.is_some(),
            run: run.clone(),
            instance: self.inner.instance.clone(),
            errors: self.inner.errors.load(Ordering::Relaxed),
            stale: 0,
            strategies: Vec::new(),
            inside: Vec::new(),
            first_overlaps: Vec::new(),
        };
        let Some(run) = run else { return Ok(report) };
        let (stats, first, products) = keys(&run);
        let mut conn = self.inner.conn.clone();
        let fields: Vec<(String, u64)> = redis::cmd("HGETALL")
            .arg(&stats)
            .query_async(&mut conn)
            .await?;
        for (field, value) in fields {
            let Some((strategy, what)) = field.rsplit_once('|') else {
                continue;
            };
            let entry = match report
                .strategies
                .iter_mut()
                .position(|s| s.strategy == strategy)
            {
                Some(i) => &mut report.strategies[i],
                None => {
                    report.strategies.push(StrategyHistory {
                        strategy: strategy.to_owned(),
                        ..StrategyHistory::default()
                    });
                    report.strategies.last_mut().expect("just pushed")
                }
            };
            match what {
                "entries" => entry.entries = value,
                "overlaps" => entry.overlaps = value,
                "max_holders" => entry.max_holders = value,
                _ => {}
            }
        }
        let product_ids: Vec<i64> = redis::cmd("SMEMBERS")
            .arg(&products)
            .query_async(&mut conn)
            .await?;
        for product in product_ids {
            let members: Vec<(String, i64)> = redis::cmd("HGETALL")
                .arg(inside_key(&run, product))
                .query_async(&mut conn)
                .await?;
            for (member, since_us) in members {
                let instance = member
                    .rsplit_once(':')
                    .map_or(member.as_str(), |(i, _)| i)
                    .to_owned();
                report.inside.push(Inside {
                    member,
                    instance,
                    product,
                    since_us,
                });
            }
        }
        let events: Vec<String> = redis::cmd("LRANGE")
            .arg(&first)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        for event in events {
            match serde_json::from_str::<OverlapEvent>(&event) {
                Ok(event) => report.first_overlaps.push(event),
                // Written by another build of `history_enter.lua`: still an
                // overlap (the counts have it), only its detail is lost.
                Err(e) => tracing::warn!(%event, error = %e, "history: unreadable overlap event"),
            }
        }
        Ok(report)
    }
}
